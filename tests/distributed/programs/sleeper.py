"""Says it is ready, then sleeps: the launcher's signal forwarding must end it."""
import os
import time

print(f"ready {os.environ['RANK']}", flush=True)
time.sleep(120)
