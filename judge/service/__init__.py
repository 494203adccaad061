"""The grading service (``judge serve``): a job queue in the grading store, an HTTP API and a web page.

* ``config``   what ``judge serve`` was asked for (device, slots, limits, files);
* ``auth``     who is asking: staff and student tokens (``--token-file``, ``--tokens``), rate limits;
* ``runner``   the queue: jobs claimed from the store and judged by the executors of ``judge grade``
               (local workers per GPU, or Ray), each finished exactly once; a restart re-queues what was running;
* ``views``    what each person may see of a report (the rubric's visibility), the leaderboard, the staff table;
* ``app``      the FastAPI application: the JSON API (``/submissions``, ``/problems``, ``/health``, the
               server-sent events of a job) and the pages under ``/ui`` (Jinja2 templates, static files);
* ``server``   uvicorn on a socket bound first (so ``--port 0`` prints the port it got).

It needs the ``[serve]`` extra (``pip install -e '.[serve]'``); nothing else in the judge imports it.
"""
