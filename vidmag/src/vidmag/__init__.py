"""Eulerian video magnification."""
