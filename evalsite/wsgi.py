import os

from django.core.wsgi import get_wsgi_application

from evalsite.bodies import ChunkedBodies

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# Chunked request bodies (Node OTLP exporters) are read whole: evalsite/bodies.py.
application = ChunkedBodies(get_wsgi_application())
