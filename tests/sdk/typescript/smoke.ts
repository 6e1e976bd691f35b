// One smoke flow through the TypeScript client (openapi-typescript types + openapi-fetch)
// generated from the committed spec; tests/sdk_clients.rs type-checks it with `tsc --strict`
// and runs it against a `reporter serve`.
//
// Usage: node dist/smoke.js <base url> <bearer token>. Exits non-zero, naming the step, on
// any surprise.
import createClient from "openapi-fetch";
import type { components, paths } from "./generated/schema.d.ts";

type Report = components["schemas"]["Report"];

function fail(step: string, detail: unknown): never {
  console.error(`${step}: ${JSON.stringify(detail)}`);
  process.exit(1);
}

function ok<T>(step: string, r: { data?: T; error?: unknown; response: Response }): T {
  if (r.data === undefined) {
    fail(step, { status: r.response.status, error: r.error });
  }
  return r.data;
}

async function main(baseUrl: string, token: string): Promise<void> {
  const client = createClient<paths>({
    baseUrl,
    headers: { Authorization: `Bearer ${token}` },
  });

  const source = "{% for a in bank.accounts %}{{ a.account_id }};{% endfor %}\n";
  const template = ok(
    "upload a template",
    await client.POST("/v1/templates", {
      body: { template: "", outputFormat: "txt", description: "SDK smoke (TypeScript)" },
      bodySerializer: (body) => {
        const form = new FormData();
        form.append("template", new Blob([source], { type: "text/plain" }), "accounts.tpl");
        form.append("outputFormat", body.outputFormat);
        form.append("description", body.description ?? "");
        return form;
      },
    }),
  );
  if (template.mappedFields["bank"]?.["accounts"]?.[0] !== "account_id") {
    fail("upload a template", template);
  }

  // The preview: two rows of the seven accounts, nothing stored.
  const preview = ok(
    "preview the template",
    await client.POST("/v1/templates/preview", {
      body: { template: source, outputFormat: "txt", filters: {}, limit: 2 },
    }),
  );
  if (
    preview.status !== "Finished" ||
    !preview.truncated ||
    preview.output?.split(";").length !== 3 ||
    preview.sections["bank"]?.rows["accounts"] !== 2
  ) {
    fail("preview the template", preview);
  }

  let report: Report = ok(
    "request a report",
    await client.POST("/v1/reports", { body: { templateId: template.id, filters: {} } }),
  );
  const until = Date.now() + 60_000;
  while (report.status === "Processing") {
    if (Date.now() > until) fail("poll the report", "still Processing after 60 s");
    await new Promise((r) => setTimeout(r, 200));
    report = ok(
      "poll the report",
      await client.GET("/v1/reports/{id}", { params: { path: { id: report.id } } }),
    );
  }
  if (report.status !== "Finished") fail("poll the report", report);
  const download = await client.GET("/v1/reports/{id}/download", {
    params: { path: { id: report.id } },
    parseAs: "text",
  });
  const text = ok("download the report", download);
  if (typeof text !== "string" || text.split(";").length < 3) {
    fail("download the report", text);
  }

  const due = new Date(Date.now() + 120 * 24 * 3600 * 1000).toISOString();
  const deadline = ok(
    "create a deadline",
    await client.POST("/v1/deadlines", {
      body: {
        name: "SDK smoke deadline",
        type: "regulatory",
        dueDate: due,
        frequency: "once",
        color: "#1E88E5",
        templateId: template.id,
      },
    }),
  );
  const delivered = ok(
    "deliver the deadline",
    await client.PATCH("/v1/deadlines/{id}/deliver", {
      params: { path: { id: deadline.id } },
      body: { delivered: true },
    }),
  );
  if (delivered.status !== "delivered" || delivered.deliveredAt == null) {
    fail("deliver the deadline", delivered);
  }

  const manifest = ok("read the event manifest", await client.GET("/v1/streaming/events"));
  const keys = manifest.events.map((e) => e.key).sort();
  if (keys.length !== 12 || !keys.includes("report.finished")) fail("read the event manifest", keys);
  console.log(
    `typescript smoke: template ${template.id}, report ${report.id} (${text.length} bytes), ` +
      `deadline ${deadline.id} delivered, ${keys.length} event definitions`,
  );
}

const [baseUrl, token] = process.argv.slice(2);
if (!baseUrl || !token) fail("arguments", "usage: node dist/smoke.js <base url> <token>");
await main(baseUrl, token);
