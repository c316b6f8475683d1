// Drives `aicr mcp review` with the official MCP TypeScript SDK through a
// scripted session, spawning the server over stdio, and prints one JSON
// report of every step on stdout.
//
//   node session.mjs <steps.json> <aicr> [mcp review args...]
//
// steps.json: {"steps": [...]} where a step is one of
//   {"call": "review_begin", "arguments": {...}}
//   {"waitUntilDone": {"session_id": "...", "max_wait_seconds": 5}, "limit": 120}
//       (review_wait again while next is "running", up to limit calls)
//   {"kill": true}       SIGKILL the server process, then start a new one
//   {"get": "<url>"}     an HTTP GET (the test's gate)
//   {"write": {"path": "...", "content": "..."}}
// "$SID" in string arguments is replaced by the first session_id returned.
import { readFileSync, writeFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [stepsPath, aicr, ...serveArgs] = process.argv.slice(2);
const { steps } = JSON.parse(readFileSync(stepsPath, "utf8"));
const report = { sdk: "", tools: [], results: [], servers: 0 };
report.sdk = JSON.parse(
  readFileSync(new URL("./node_modules/@modelcontextprotocol/sdk/package.json", import.meta.url), "utf8"),
).version;

let client, transport;
async function connect() {
  // The whole environment, as a client registration that sets the
  // model key for the server would: the SDK passes only a safe subset.
  transport = new StdioClientTransport({ command: aicr, args: serveArgs, stderr: "inherit", env: process.env });
  client = new Client({ name: "aicr-session-tsclient", version: "1.0.0" });
  await client.connect(transport);
  report.servers++;
}

let sid = "";
const subst = (v) => {
  if (typeof v === "string") return v.replaceAll("$SID", sid);
  if (Array.isArray(v)) return v.map(subst);
  if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, subst(x)]));
  return v;
};
const call = async (name, args) => {
  const res = await client.callTool({ name, arguments: subst(args) });
  const out = {
    name,
    isError: res.isError === true,
    text: (res.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n"),
    structuredContent: res.structuredContent ?? null,
  };
  if (!sid && out.structuredContent?.session_id) sid = out.structuredContent.session_id;
  return out;
};

await connect();
report.tools = (await client.listTools()).tools.map((t) => ({
  name: t.name,
  required: [...(t.inputSchema.required ?? [])].sort(),
  additionalProperties: t.inputSchema.additionalProperties,
}));
for (const step of steps) {
  if (step.call) {
    report.results.push(await call(step.call, step.arguments ?? {}));
  } else if (step.waitUntilDone) {
    let out, calls = 0;
    do {
      out = await call("review_wait", step.waitUntilDone);
      calls++;
    } while (!out.isError && out.structuredContent?.next === "running" && calls < (step.limit ?? 60));
    out.calls = calls;
    report.results.push(out);
  } else if (step.kill) {
    process.kill(transport.pid, "SIGKILL");
    await client.close().catch(() => {});
    await connect();
    report.results.push({ name: "kill", isError: false, text: "", structuredContent: null });
  } else if (step.get) {
    const r = await fetch(step.get);
    report.results.push({ name: "get", isError: !r.ok, text: await r.text(), structuredContent: null });
  } else if (step.write) {
    writeFileSync(step.write.path, step.write.content);
    report.results.push({ name: "write", isError: false, text: "", structuredContent: null });
  }
}
await client.close();
process.stdout.write(JSON.stringify(report) + "\n");
