"""A rank that raises, hangs or dies (argv[1]) while rank 0 waits in an all_reduce with a 2 s
process-group timeout: rank 0 must fail with an error naming rank 1, not hang."""
import datetime
import os
import sys
import time

from _lib import dist, torch

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=2))
r = dist.get_rank()
dist.all_reduce(torch.ones(2))
if r == 1:
    if sys.argv[1] == "raise":
        raise ValueError("boom on rank 1")
    if sys.argv[1] == "hang":
        time.sleep(60)
    if sys.argv[1] == "die":
        os._exit(3)
dist.all_reduce(torch.ones(2))
print("not reached", flush=True)
