"""Getting runs to a worker: the after-commit signal to Redis (`signals`: a
resume now, a timer, an advance or drain job), the resume loop and the timer
loop that run as threads in every worker, the drain of due pending rows and
the minute sweep behind them all.

Imports `engine`, `store` and the layers above; the only layer of the engine
that talks to Redis. Redis only carries "there is work": lose it and the
sweep finds every due row in the database.
"""
