from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from teams.access import team_required


@team_required
def home(request: HttpRequest) -> HttpResponse:
    return render(request, "runs/home.html", {})
