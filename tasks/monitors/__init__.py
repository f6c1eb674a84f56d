"""Monitors: a frozen test-set version re-run against contenders on a cron schedule, each run
graded, compared with a baseline, and its crossed thresholds alerted by webhook and e-mail.

Owns the Monitor, MonitorRun, MonitorAlert and AlertDelivery models (models.py, imported by
tasks/models.py so Django registers them under the `tasks` app), monitor definitions, runs,
grading, comparisons, alerts and their delivery, the monitor pages, API, forms and demo data.

May import: the tasks app's models and its review_side, generation, campaigns, checks, intake
and blinding packages, and evalsite. Never `reviews` (tests/test_layers.py checks it). Other code uses the
public names of its modules (no `_private` name crosses a module boundary); this file
re-exports nothing, so importing `tasks.monitors.models` stays light.

A run, module by module:
1. beat tick: `jobs.monitor_tick_job` -> `schedule.monitor_schedule_tick` finds due cron times
   (`cron.latest_due`), one monitor at a time;
2. run start: `runs.monitor_run_start` creates run N+1 and its hidden campaign, queued for
   generation (also from the page, the API and `run_monitor`);
3. generation: the campaign pipeline (tasks/generation/services.py); when its last row ends it sends
   `jobs.monitor_run_finish_job` by its registered name (the tick grades runs whose message was
   lost);
4. grading: `grading.monitor_run_finish` computes each contender's metrics (`metrics`);
5. comparison: `compare.compare_runs` against the baseline (`runs.baseline_for`): paired
   bootstrap intervals and sign tests (`metrics`);
6. alerts: `alerts.alerts_record` records each crossed threshold once
   (`definition.threshold_crossed`) with a delivery per channel;
7. webhook delivery: `jobs.alert_deliver_job` -> `alerts.alert_deliver` signs and posts it,
   retried with backoff; `alerts.alert_resend` and the tick resend.

Reads for people: `selectors` (pages), `format` (figures), `summary` (CLI), through `views`,
`api` and `forms`; `review` makes a blind campaign of a run's regressions.
"""
