"""One APIRouter per resource; :func:`service.api.app.create_app` includes them all."""
