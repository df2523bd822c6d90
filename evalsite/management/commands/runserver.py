"""``runserver`` as Django's (static files included), reading chunked request bodies: Node
OTLP exporters send their exports with ``Transfer-Encoding: chunked`` (evalsite/bodies.py)."""

from django.contrib.staticfiles.management.commands.runserver import Command as StaticRunserver

from evalsite.bodies import ChunkedWSGIServer


class Command(StaticRunserver):
    server_cls = ChunkedWSGIServer
