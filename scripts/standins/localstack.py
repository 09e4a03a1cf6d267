#!/usr/bin/env python3
"""The stand-in localstack image's server: moto, with scripts/moto_server.py's
fixes, on LocalStack's port and with the parts of LocalStack the project's
docker-compose.yml and test helpers use:

  - the ready-stage init hooks: once the server answers, every file in
    /etc/localstack/init/ready.d runs in name order (*.sh with bash, *.py with
    this Python), with `awslocal` on the PATH, and its state goes UNKNOWN,
    RUNNING, then SUCCESSFUL or ERROR. The stage is "completed" once they all
    ran, whatever their states, as LocalStack reports it;
  - GET /_localstack/init/ready (and /_localstack/init): the stage's
    "completed" flag and its scripts' states, in LocalStack's shape, which the
    compose healthcheck reads;
  - GET /_localstack/health: the services, which testcontainers waits for.

Everything else is moto's: SNS, SQS and the rest, in account MOTO_ACCOUNT_ID.
The boot, start and shutdown stages are not run.

    python3 localstack.py [-H 0.0.0.0] [-p 4566]
"""

import argparse
import json
import logging
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import moto
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import make_server

import moto_server  # scripts/moto_server.py, copied beside this file

STAGES = ("BOOT", "START", "READY", "SHUTDOWN")


class InitHooks:
    """The ready stage's scripts and their states."""

    def __init__(self, directory):
        self.lock = threading.Lock()
        self.completed = False
        self.scripts = [
            {"stage": "READY", "name": p.name, "state": "UNKNOWN", "path": str(p)}
            for p in sorted(Path(directory).glob("*"))
            if p.is_file() and p.suffix in (".sh", ".py")
        ]

    def run(self, env):
        try:
            for script in self.scripts:
                self.set(script, "RUNNING")
                interpreter = "bash" if script["path"].endswith(".sh") else sys.executable
                print(f"init: running {script['path']}", flush=True)
                code = subprocess.call([interpreter, script["path"]], env=env)
                self.set(script, "SUCCESSFUL" if code == 0 else "ERROR")
                print(f"init: {script['name']} exited {code}", flush=True)
        finally:
            with self.lock:
                self.completed = True
            print("Ready.", flush=True)

    def set(self, script, state):
        with self.lock:
            script["state"] = state

    def answer(self, stage):
        with self.lock:
            scripts = [{k: s[k] for k in ("stage", "name", "state")} for s in self.scripts]
            if stage is None:
                done = {s: s in ("BOOT", "START") for s in STAGES}
                done["READY"] = self.completed
                return {"completed": done, "scripts": scripts}
            if stage != "READY":
                return {"completed": stage in ("BOOT", "START"), "scripts": []}
            return {"completed": self.completed, "scripts": scripts}


def localstack_routes(app, hooks):
    """Wraps moto's WSGI app with LocalStack's /_localstack endpoints."""

    def reply(start_response, status, body):
        data = json.dumps(body).encode()
        start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
        return [data]

    def wsgi(environ, start_response):
        path = environ.get("PATH_INFO", "")
        if not path.startswith("/_localstack/"):
            return app(environ, start_response)
        if path == "/_localstack/health":
            return reply(start_response, "200 OK", {
                "services": {"sns": "running", "sqs": "running"},
                "edition": "community",
                "version": f"moto {moto.__version__} (stand-in)",
            })
        if path == "/_localstack/init":
            return reply(start_response, "200 OK", hooks.answer(None))
        if path.startswith("/_localstack/init/"):
            stage = path.rsplit("/", 1)[1].upper()
            if stage in STAGES:
                return reply(start_response, "200 OK", hooks.answer(stage))
        return reply(start_response, "404 Not Found", {"error": f"no such endpoint: {path}"})

    return wsgi


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("-H", "--host", default="0.0.0.0")
    parser.add_argument("-p", "--port", type=int, default=4566)
    parser.add_argument("--init-dir", default="/etc/localstack/init/ready.d")
    args = parser.parse_args()

    for name, value in moto_server.PATCHES.items():
        setattr(moto_server.models.Queue, name, value)
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per request

    hooks = InitHooks(args.init_dir)
    app = localstack_routes(DomainDispatcherApplication(create_backend_app), hooks)
    server = make_server(args.host, args.port, app, threaded=True)  # listening from here on
    print(f"moto {moto.__version__} on {args.host}:{args.port}", flush=True)

    env = dict(os.environ)
    env.setdefault("AWS_ACCESS_KEY_ID", "test")
    env.setdefault("AWS_SECRET_ACCESS_KEY", "test")
    env.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    threading.Thread(target=hooks.run, args=(env,), daemon=True).start()

    def stop(signum, frame):
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    server.serve_forever()


if __name__ == "__main__":
    main()
