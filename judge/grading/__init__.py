"""Course grading on top of the judge: a roster in, stored and exported results out.

The judge itself (``judge.session``) judges one file. This package runs it
many times and projects its report into what courses use:

* ``roster``       who submitted what (a directory or a CSV) and the file-picking rule;
* ``rubric``       the course's TOML: points per group, speed mapping, visibility, secret seed;
* ``job``          one judging job in its own process (``python -m judge.grading.job``);
* ``executors``    where jobs run: local worker processes (one per GPU, or N on the CPU) or Ray tasks;
* ``store``        SQLite (WAL): one row per (student, problem, submission sha256), written as each job ends;
                   its schema migrates itself (numbered steps) when an older store is opened;
* ``course_record`` the staff's decisions kept in the store: extensions, overrides, best or last, display names;
* ``standings``    which result counts per student and problem, the staff's table and the CSV export;
* ``csv_safe``     the CSV writer every export uses: no cell a spreadsheet would run as a formula;
* ``batch``        ``judge grade``: roster -> executor -> store -> reports, CSV, summary;
* ``gradescope``   the autograder bundle and its ``results.json``;
* ``prairielearn`` the external-grader entry point and its ``results.json``;
* ``forward_client`` the client of the grading service (``--forward URL``): submit, then poll.

The grading service itself (``judge serve``: a job queue in the store, an API and web pages) is the
package judge.service.
"""
