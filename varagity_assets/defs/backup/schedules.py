"""The optional backup schedule: ``BACKUP_SCHEDULE`` (a cron expression, unset by
default) exports every enabled corpus at its ticks (UTC).

Dagster fixes a schedule's cron when the code location loads, so the setting is read
then (not at import): changing it takes a restart of the stack, like the other settings
that are not runtime-editable.
"""

import dagster as dg

from varagity.config import get_settings
from varagity.pipeline import CORPUS_TAG
from varagity_assets.defs.backup.jobs import export_bundle_job

SCHEDULE_NAME = "backup_schedule"


@dg.definitions
def backup_schedules() -> dg.Definitions:
    """The schedule when ``BACKUP_SCHEDULE`` names a cron, else nothing."""
    settings = get_settings()
    cron = settings.BACKUP_SCHEDULE
    if not cron:
        return dg.Definitions()
    corpora = ["rag", "graph"] if settings.GRAPH_ENABLED else ["rag"]

    @dg.schedule(
        name=SCHEDULE_NAME,
        cron_schedule=cron,
        execution_timezone="UTC",
        job=export_bundle_job,
        default_status=dg.DefaultScheduleStatus.RUNNING,
        description=f"Back up {' and '.join(corpora)} at {cron} (BACKUP_SCHEDULE).",
    )
    def backup_schedule(context: dg.ScheduleEvaluationContext) -> list[dg.RunRequest]:
        tick = context.scheduled_execution_time.strftime("%Y%m%dT%H%M")
        return [
            dg.RunRequest(
                run_key=f"{corpus}-{tick}",
                partition_key=corpus,
                tags={CORPUS_TAG: corpus},
            )
            for corpus in corpora
        ]

    return dg.Definitions(schedules=[backup_schedule])
