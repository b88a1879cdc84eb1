"""The REST API for integrators: the same services and selectors as the designer."""
