"""One smoke flow through the Python client openapi-python-client generates from the committed
spec (tests/tools/sdk_clients.rs generates it and runs this against a `reporter serve`).

Usage: python3 smoke.py <base url> <bearer token>; the generated package `reporter_client`
must be importable. Exits non-zero, saying which step failed, on any surprise.
"""

import datetime
import io
import sys
import time

from reporter_client import AuthenticatedClient
from reporter_client.api.deadlines import create_deadline, deliver_deadline
from reporter_client.api.reports import create_report, download_report, get_report
from reporter_client.api.streaming import get_streaming_events
from reporter_client.api.templates import create_template, get_template, preview_template
from reporter_client.models import (
    CreateDeadlineInput,
    CreateReportInput,
    CreateReportInputFilters,
    CreateTemplateBody,
    Deadline,
    DeadlineStatus,
    DeadlineType,
    DeliverDeadlineInput,
    Frequency,
    OutputFormat,
    Report,
    ReportStatus,
    StreamingManifest,
    Template,
    TemplatePreview,
    TemplatePreviewInput,
    TemplatePreviewStatus,
)
from reporter_client.types import File

TEMPLATE = b"{% for a in bank.accounts %}{{ a.account_id }};{% endfor %}\n"


def expect(value, kind, step):
    """The typed model of a 2xx, or exit naming the step and what came back."""
    if not isinstance(value, kind):
        sys.exit(f"{step}: expected {kind.__name__}, got {value!r}")
    return value


def main(base_url: str, token: str) -> None:
    client = AuthenticatedClient(base_url=base_url, token=token, raise_on_unexpected_status=True)

    body = CreateTemplateBody(
        template=File(payload=io.BytesIO(TEMPLATE), file_name="accounts.tpl", mime_type="text/plain"),
        output_format=OutputFormat.TXT,
        description="SDK smoke (Python)",
    )
    template = expect(create_template.sync(client=client, body=body), Template, "upload a template")
    assert template.mapped_fields.additional_properties["bank"]["accounts"] == ["account_id"], template
    again = expect(get_template.sync(template.id, client=client), Template, "read the template")
    assert again.id == template.id

    sent = TemplatePreviewInput(template=TEMPLATE.decode(), output_format="txt", limit=2)
    preview = expect(preview_template.sync(client=client, body=sent), TemplatePreview, "preview the template")
    assert preview.status == TemplatePreviewStatus.FINISHED and preview.truncated, preview
    assert preview.output.count(";") == 2, preview.output
    assert preview.sections.additional_properties["bank"].rows.additional_properties["accounts"] == 2, preview

    request = CreateReportInput(template_id=template.id, filters=CreateReportInputFilters())
    report = expect(create_report.sync(client=client, body=request), Report, "request a report")
    deadline = time.monotonic() + 60
    while report.status == ReportStatus.PROCESSING:
        if time.monotonic() > deadline:
            sys.exit("poll the report: still Processing after 60 s")
        time.sleep(0.2)
        report = expect(get_report.sync(report.id, client=client), Report, "poll the report")
    if report.status != ReportStatus.FINISHED:
        sys.exit(f"poll the report: ended {report.status}: {report.metadata}")
    artifact = download_report.sync(report.id, client=client)
    content = expect(artifact, File, "download the report").payload.read()
    assert content.count(b";") >= 2, content[:200]

    due = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=120)
    new = CreateDeadlineInput(
        name="SDK smoke deadline",
        type_=DeadlineType.REGULATORY,
        due_date=due,
        frequency=Frequency.ONCE,
        color="#1E88E5",
        template_id=template.id,
    )
    created = expect(create_deadline.sync(client=client, body=new), Deadline, "create a deadline")
    assert created.status == DeadlineStatus.PENDING, created
    delivered = expect(
        deliver_deadline.sync(created.id, client=client, body=DeliverDeadlineInput(delivered=True)),
        Deadline,
        "deliver the deadline",
    )
    assert delivered.status == DeadlineStatus.DELIVERED, delivered
    assert delivered.delivered_at is not None

    manifest = expect(get_streaming_events.sync(client=client), StreamingManifest, "read the event manifest")
    keys = sorted(e.key for e in manifest.events)
    assert len(keys) == 12 and "report.finished" in keys, keys
    print(f"python smoke: template {template.id}, report {report.id} ({len(content)} bytes), "
          f"deadline {created.id} delivered, {len(keys)} event definitions")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
