"""The worker pool: sandboxed workers that have imported torch and Triton before they are given a submission.

A worker's start is most of a verdict's fixed cost (importing torch and Triton, on a GPU creating the CUDA
context): seconds, for a submission whose cases may take less. ``judge grade`` and ``judge serve`` judge
many submissions, each in a job process of its own (judge.grading.job), so the pool lives in the driver
(the grade command, the service) and hands its workers to the jobs over a Unix socket:

* The driver's ``PoolServer`` (judge.pool.server) spawns workers through the same sandbox backends as a job
  does, with no submission: each gets the worker code and an empty submission directory (mounted read-only in
  bwrap and docker), and its "prepare" message (interpreter flag, device, GPU memory cap, its secret). It
  imports torch and Triton, wraps Triton's launchers, says "ready" and waits.
* A job's :class:`~judge.channel.WorkerChannel` asks ``take`` (judge.pool.client) for a worker of its kind
  first (the key, judge.pool.key: backend, entry module, device, GPU, interpreter flag and the limits the
  sandbox fixes when it starts: memory, processes, scratch, GPU memory, and whether a kernel cache is
  mounted). It gets the worker's three pipes (passed as file descriptors), its secret, and a connection over
  which it kills, waits for and measures the worker (the driver is its parent). Then, as for a worker it
  spawned itself, it copies the submission into the worker's submission directory and names it in "setup"; the
  worker takes the integrity snapshot, imports the submission and says "hello". Everything the worker says is
  parsed by judge.replies, as always. None to be had (the pool is off, empty, or has none of that kind): the
  job spawns one itself, as without a pool.
* One submission per worker: a worker is handed out once, and when its job closes it (or the job's
  connection drops) the driver kills it and removes its directories. Nothing of any submission has run
  in a worker before it is handed out: the pool only spawns, sends "prepare" and waits.

How many: for each kind, as many as one job has held at once (its parallel workers, its replay worker),
at most ``size`` (``--pool N``); a kind is learned from the first job that asks for it (that job starts
its own). Each taken worker is replaced at once, until the driver says no more jobs are coming
(``PoolServer.drain``). Where a job holds two or more of the submission's workers, they are forked as a
litter (judge.sandbox.litter): one import of torch for a job's worth, in one sandbox that the first job to
take one of them then has alone (``PoolServer._take``).

A GPU worker's kernel cache (judge.intake.kernel_cache: a directory per submission content) cannot be
known when the worker is spawned: a pooled worker gets a directory of its own, filled from the content's
cache when it is handed out and merged back (new entries only) when it is closed. Except in ``submit``'s
head start (judge.pool.head_start), which spawns its workers for one known file: they mount that file's
content cache itself, as workers the session spawns do, and hand out only to a job of that cache.

The modules: judge.pool.key (a worker's kind, and the socket's messages), judge.pool.server (the driver's
side), judge.pool.client (the job's side: the worker it takes, and the proxy it speaks to it through),
judge.pool.copies (kernel-cache entries copied between a worker's cache and another) and
judge.pool.head_start (``submit``'s own pool).
"""
