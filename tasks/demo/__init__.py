"""The demo data `./dev run` loads: test sets, campaigns and contenders on the built-in fake
endpoint (testsets.py, campaign.py, agents.py, vision.py; the files are in demo_data/).
Each step is idempotent.

May import: any package of tasks (it sits above them all); nothing imports it but the demo
command.
"""
