"""Statecraft's Django project: settings, root URLs and the designer UI."""
