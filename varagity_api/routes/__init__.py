"""One module per resource; ``api_router`` includes them all."""

from fastapi import APIRouter

from varagity_api.routes import chat, health, search

api_router = APIRouter(prefix="/api")
api_router.include_router(health.router)
api_router.include_router(search.router)
api_router.include_router(chat.router)
