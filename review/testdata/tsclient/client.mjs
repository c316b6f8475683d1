// An MCP client built on the official TypeScript SDK, independent of the
// Go code it checks. It connects to `aicr mcp serve` over stdio (spawning
// it) or Streamable HTTP (an already running server), lists the tools,
// makes the calls of a plan file and prints one JSON report on stdout.
//
//   node client.mjs stdio <plan.json> <aicr> [serve args...]
//   node client.mjs http  <plan.json> <url>
//
// plan.json: {"calls": [{"name": "aicr.skip", "arguments": {...}}, ...]}
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [mode, planPath, target, ...serveArgs] = process.argv.slice(2);
if (!mode || !planPath || !target) {
  console.error("usage: client.mjs stdio|http <plan.json> <aicr binary|url> [serve args...]");
  process.exit(2);
}
const plan = JSON.parse(readFileSync(planPath, "utf8"));

let transport;
if (mode === "stdio") {
  transport = new StdioClientTransport({ command: target, args: serveArgs, stderr: "inherit" });
} else if (mode === "http") {
  transport = new StreamableHTTPClientTransport(new URL(target));
} else {
  console.error(`unknown mode ${mode}`);
  process.exit(2);
}

const ms = (t0) => Math.round((performance.now() - t0) * 10) / 10;
const report = { sdk: "", server: null, tools: [], calls: [], timingsMs: {} };
report.sdk = JSON.parse(
  readFileSync(new URL("./node_modules/@modelcontextprotocol/sdk/package.json", import.meta.url), "utf8"),
).version;

const client = new Client({ name: "aicr-tsclient", version: "1.0.0" });
let t0 = performance.now();
await client.connect(transport);
report.timingsMs.connect = ms(t0);
report.server = client.getServerVersion() ?? null;

t0 = performance.now();
const listed = await client.listTools();
report.timingsMs.listTools = ms(t0);
report.tools = listed.tools.map((t) => ({
  name: t.name,
  description: t.description ?? "",
  required: [...(t.inputSchema.required ?? [])].sort(),
  properties: Object.fromEntries(
    Object.entries(t.inputSchema.properties ?? {}).map(([k, v]) => [k, v.type ?? ""]),
  ),
  additionalProperties: t.inputSchema.additionalProperties,
  // Typed servers (aicr mcp admin) declare what structuredContent holds;
  // the SDK validates every successful call's structuredContent against it.
  hasOutputSchema: t.outputSchema != null,
  annotations: t.annotations ?? null,
}));

t0 = performance.now();
for (const call of plan.calls) {
  const res = await client.callTool({ name: call.name, arguments: call.arguments });
  report.calls.push({
    name: call.name,
    isError: res.isError === true,
    text: (res.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n"),
    structuredContent: res.structuredContent ?? null,
  });
}
report.timingsMs.calls = ms(t0);

t0 = performance.now();
await client.close();
report.timingsMs.close = ms(t0);
process.stdout.write(JSON.stringify(report) + "\n");
