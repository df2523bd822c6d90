FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 LITELLM_LOCAL_MODEL_COST_MAP=True
# Every process runs as this unprivileged user (a fixed id, so orchestrators can check it is
# not root); it may write only its home, /tmp and the data folder.
RUN groupadd --system --gid 10001 evalsite \
    && useradd --system --uid 10001 --gid evalsite --create-home --shell /usr/sbin/nologin evalsite
WORKDIR /app
COPY pyproject.toml constraints.txt README.md ./
COPY evalsite evalsite
COPY teams teams
COPY rubrics rubrics
COPY judge_engine judge_engine
COPY runs runs
COPY judging judging
COPY reviews reviews
RUN pip install --no-cache-dir -c constraints.txt .
# .dockerignore keeps local environments, data, secrets and caches out of this copy.
COPY . .
RUN SECRET_KEY=build DEBUG=0 ALLOWED_HOSTS=build python manage.py collectstatic --noinput \
    && mkdir -p /app/data && chown -R evalsite:evalsite /app/data
USER 10001:10001
EXPOSE 8000
CMD ["gunicorn", "evalsite.wsgi", "--bind", "0.0.0.0:8000", "--workers", "3", "--threads", "16"]
