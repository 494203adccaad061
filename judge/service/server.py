"""``judge serve``: the service's parts put together, and uvicorn on a socket bound first.

The socket is bound before anything else is printed, so that ``--port 0``
answers with the port it got: the first line on stderr is always
``serving on http://HOST:PORT (...)`` (the tests and scripts read it).
"""

from __future__ import annotations

import signal
import socket
from dataclasses import dataclass
from pathlib import Path

from judge.service.config import ServiceConfig

# The CPU niceness of the service's job processes (and so of their workers): below the service's own, so that
# a full queue on a small host does not hold up the students' status calls and pages.
JOB_NICENESS = 10


class ServeError(Exception):
    """The service cannot start as asked: a usage error, one line."""


@dataclass
class Service:
    config: ServiceConfig
    store: object
    auth: object
    runner: object
    seeds: dict
    sessions: object = None

    @property
    def state(self) -> Path:
        return self.config.state


def open_service(config: ServiceConfig, log=print) -> Service:
    """Open the store, read the tokens, fix the seeds and make the executor; ServeError for a usage error."""
    from judge.grading.batch import GradeError, problem_seeds
    from judge.grading.executors import ExecutorError, LocalExecutor, RayExecutor
    from judge.grading.store import Store
    from judge.problems import all_problems
    from judge.service.auth import Auth, AuthError
    from judge.service.runner import Runner

    try:
        auth = Auth.load(config.staff_token, config.tokens_file, config.staff_file, log=log)
    except AuthError as exc:
        raise ServeError(str(exc)) from None
    try:
        config.state.mkdir(parents=True, exist_ok=True)
        store = Store(config.store_path)
    except (OSError, Exception) as exc:  # sqlite3.Error too: one line
        raise ServeError(f"cannot open the store {config.store_path}: {exc}") from None
    try:
        seeds = problem_seeds(store, all_problems(), config.rubric)
    except GradeError as exc:
        store.close()
        raise ServeError(
            str(exc).replace("grade into a new --out directory", "serve from a new --state directory")
        ) from None
    try:
        if config.executor == "ray":
            executor = RayExecutor(
                address=config.ray_address,
                slots=config.slots,
                use_gpu=config.device == "cuda",
                timeout=config.job_timeout,
            )
        else:
            # Judging is batch work and the pages are not: the jobs yield the CPU to the service's answers.
            executor = LocalExecutor(
                config.slots, timeout=config.job_timeout, pool=config.pool, log=log, nice=JOB_NICENESS
            )
    except ExecutorError as exc:
        store.close()
        raise ServeError(str(exc)) from None
    runner = Runner(
        store,
        executor,
        device=config.device,
        sandbox=config.sandbox,
        seeds=seeds,
        rubric=config.rubric,
        state=config.state,
        max_attempts=config.max_attempts,
        max_examples=config.max_examples,
        log=log,
    )
    from judge.service.sessions import Sessions

    return Service(
        config=config,
        store=store,
        auth=auth,
        runner=runner,
        seeds=seeds,
        sessions=Sessions(store, config.session_hours * 3600),
    )


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(256)
    sock.set_inheritable(True)
    return sock


def serve(service: Service, sock: socket.socket, log=print) -> None:
    import uvicorn

    from judge.service.app import create_app

    service.runner.executor.start()  # Ray: connected from this (the main) thread, before uvicorn takes the signals
    # uvicorn puts back the handlers it found and raises the signal again once its graceful shutdown is
    # done; a SIGTERM then met Ray's driver handler, which exits with status 15. A stop is status 0
    # (README): the handler uvicorn finds and puts back is this one, also for a SIGTERM before it starts.
    signal.signal(signal.SIGTERM, _stopped)
    app = create_app(service)
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, timeout_graceful_shutdown=5, proxy_headers=False
    )
    server = uvicorn.Server(config)
    server.run(sockets=[sock])


def _stopped(signum, frame) -> None:
    raise SystemExit(0)
