def current_team(request):
    return {
        "team": getattr(request, "team", None),
        "membership": getattr(request, "membership", None),
        "memberships": getattr(request, "memberships", []),
    }
