"""The rubric pages: the editor (editor.py: list, create, draft, settings, history, diff, try
it) and the failed-criteria review (failures.py)."""
