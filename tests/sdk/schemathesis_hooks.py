"""Schemathesis hooks of tests/tools/api_contract.rs (loaded by tests/sdk/schemathesis.toml).

Two rules the spec cannot state are taught to the generator and the checks here; each is
narrow and says why.
"""

import schemathesis
from schemathesis.generation.modes import GenerationMode

# A template every configured deployment of the test accepts: a txt template over the bundled
# example data source.
VALID_TEMPLATE = b"{% for a in bank.accounts %}{{ a.account_id }};{% endfor %}\n"


@schemathesis.hook("map_case").apply_to(operation_id="createTemplate")
def valid_template_file(context, case):
    """One positive upload in two carries a real template file.

    A template's file must be UTF-8 text of its format, parse, and read existing fields; random
    bytes never do, so without this no template would exist and the stateful phase could not
    reach the operations on templates and reports. The other half keeps random files, whose
    refusals (400) the positive_data_acceptance settings allow.
    """
    meta = case.meta
    positive = meta is not None and meta.generation.mode == GenerationMode.POSITIVE
    if positive and isinstance(case.body, dict) and hash(case.id) % 2 == 0:
        case.body["template"] = VALID_TEMPLATE
        case.body["outputFormat"] = "txt"
    return case


@schemathesis.hook("filter_failure").apply_to(operation_id="updateDeadline")
def referenced_template_is_not_the_deadline(context, failure, case, response):
    """A deadline update naming a templateId that does not exist answers 404 for that template
    (TPL-0011, entityType Template, fields.templateId), as a create with it does. The
    resource-availability check reads any 404 after a create as the created deadline having
    vanished; this one is about the template, so it is dropped. Every other failure is kept.
    """
    if response.status_code != 404:
        return True
    try:
        body = response.json()
    except ValueError:
        return True
    about_template = body.get("entityType") == "Template" and "templateId" in (body.get("fields") or {})
    return not about_template


@schemathesis.hook("map_case").apply_to(operation_id_regex="^(createTemplate|createReport)$")
def one_idempotency_key_per_case(context, case):
    """Generated `X-Idempotency` keys repeat across unrelated cases ("0", "A", …). A reused key
    replays the first answer whatever the body (the key alone identifies a request, as in the
    original), so a later schema-violating body would "succeed" and a replayed template may
    have been deleted since. Each case gets a key of its own, still in the header's pattern;
    replays themselves are tested in tests/api/platform.rs.
    """
    key = case.headers.get("X-Idempotency") if case.headers else None
    if isinstance(key, str) and 0 < len(key) <= 200 and key.isascii() and key.isprintable() and " " not in key:
        case.headers["X-Idempotency"] = f"{key}-{case.id}"
    return case


@schemathesis.hook("map_case").apply_to(operation_id="previewTemplate")
def valid_template_source(context, case):
    """One positive preview in two sends a real template's source, alone (no templateId).

    As for uploads: random text seldom is a template of its format that parses and reads
    existing fields, so without this the render path would hardly be reached. The other half
    keeps random bodies, whose refusals (400) the positive_data_acceptance settings allow.
    """
    meta = case.meta
    positive = meta is not None and meta.generation.mode == GenerationMode.POSITIVE
    if positive and isinstance(case.body, dict) and hash(case.id) % 2 == 0:
        case.body["template"] = VALID_TEMPLATE.decode()
        case.body["outputFormat"] = "txt"
        case.body.pop("templateId", None)
    return case
