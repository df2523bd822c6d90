from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from teams.access import team_required


@team_required
def rubric_list(request: HttpRequest) -> HttpResponse:
    return render(request, "rubrics/rubric_list.html", {})
