"""Fixtures of the terminal, web and export apps' tests."""

from __future__ import annotations

import socket

import pytest


@pytest.fixture
def served_apps(monkeypatch) -> list:
    """``python -m training.serve`` up to the point it would answer requests: the apps it
    would serve are collected here, and no port is taken (tests run beside other servers)."""
    from training.apps import server

    apps: list = []
    monkeypatch.setattr(server, "listen_on", lambda host, port: socket.socket())
    monkeypatch.setattr(server, "serve", lambda app, listener: apps.append(app))
    return apps
