"""The floor: Flask's "hello world", served by the bench with the Procfile's
gunicorn settings, so every route of the app is compared with the least a Flask
request can cost on this machine in the same run."""

from flask import Flask

app = Flask(__name__)


@app.get("/")
def hello() -> str:
    return "Hello, World!"
