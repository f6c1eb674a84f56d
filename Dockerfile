# Production image: gunicorn for the web, the same image runs the Celery worker and beat.
FROM python:3.11-slim AS base
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    EVALSITE_DATA_DIR=/data STATIC_ROOT=/app/staticfiles
WORKDIR /app
RUN useradd --create-home --uid 1000 evalsite && mkdir -p /data && chown evalsite /data
COPY pyproject.toml README.md ./
COPY evalsite ./evalsite
COPY tasks ./tasks
COPY reviews ./reviews
RUN pip install .
COPY manage.py gunicorn.conf.py ./
COPY templates ./templates
COPY static ./static
# collectstatic needs a key but none is baked into the image.
RUN SECRET_KEY=build-only python manage.py collectstatic --no-input -v0
USER evalsite
EXPOSE 8000
# Workers, threads and the per-process connection cap: gunicorn.conf.py (WEB_WORKERS, WEB_THREADS).
CMD ["gunicorn", "evalsite.wsgi"]
