"""The demo data `./dev run` loads: test sets, campaigns and contenders on the built-in fake
endpoint (testsets.py, campaign.py, agents.py, vision.py; the files are in demo_data/).
Each step is idempotent. An entry point: may import any package of tasks; nothing imports it
but the demo command.
"""
