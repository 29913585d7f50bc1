"""Spectral transforms."""
