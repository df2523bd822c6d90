from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from .middleware import SESSION_KEY
from .selectors import team_for_user


@login_required
@require_POST
def team_switch(request: HttpRequest) -> HttpResponse:
    found = team_for_user(user=request.user, team_id=request.POST.get("team", ""))
    if found is not None:
        request.session[SESSION_KEY] = str(found[0].id)
    return redirect("home")


@login_required
def no_team(request: HttpRequest) -> HttpResponse:
    return render(request, "teams/no_team.html")
