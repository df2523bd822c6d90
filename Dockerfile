FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 LITELLM_LOCAL_MODEL_COST_MAP=True
WORKDIR /app
COPY pyproject.toml constraints.txt README.md ./
COPY evalsite evalsite
COPY teams teams
COPY rubrics rubrics
COPY runs runs
COPY reviews reviews
RUN pip install --no-cache-dir -c constraints.txt .
COPY . .
RUN SECRET_KEY=build DEBUG=0 ALLOWED_HOSTS=build python manage.py collectstatic --noinput
EXPOSE 8000
CMD ["gunicorn", "evalsite.wsgi", "--bind", "0.0.0.0:8000", "--workers", "3", "--threads", "16"]
