"""The grading service (``judge serve``): a job queue in the grading store, an HTTP API and a web page.

* ``config``   what ``judge serve`` was asked for (device, slots, limits, files);
* ``auth``     who is asking: staff and student tokens (``--token-file``, ``--tokens``, read again when they
               change), rate limits;
* ``sessions`` the pages' logins: server-side sessions in the store, that expire;
* ``runner``   the queue: jobs claimed from the store and judged by the executors of ``judge grade``
               (local workers per GPU, or Ray), each finished exactly once; a restart re-queues what was running;
* ``views``    what each person may see of a report, its progress and the leaderboard (the rubric's visibility);
* ``site``     what the routes share: who is asking, submitting, a job's status as its reader may see it;
* ``app``      the FastAPI application: middleware, errors in one shape, static files (Swagger UI's included);
* ``api``      the JSON API (``/submissions``, ``/problems``, ``/leaderboard``, ``/me``, ``/health``, ``/docs``);
* ``pages``    the pages under ``/ui`` (Jinja2 templates, static files), the login, the display name;
* ``staff``    the staff's results, CSV and tools (extensions, overrides, regrades, which submission counts);
* ``server``   uvicorn on a socket bound first (so ``--port 0`` prints the port it got).

It needs the ``[serve]`` extra (``pip install -e '.[serve]'``); nothing else in the judge imports it.
"""
