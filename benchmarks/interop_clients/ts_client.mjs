// The TypeScript SDK clients of the interop matrix: v1 (@modelcontextprotocol/sdk) and v2
// (@modelcontextprotocol/client, in its default legacy negotiation and in auto), each through
// its public Client API, running the flow of flow.py (list, find_tools, call what it returned).
//
//   node ts_client.mjs v1|v2-legacy|v2-auto stdio|http TARGET meta|bind SERVER[,SERVER...]
//
// Resolves the packages from .toolroute/npm (bash .ci/run installs them). Prints one JSON line
// per server: {"server", "cell"}.
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const npm = path.resolve(here, "..", "..", ".toolroute", "npm", "node_modules");
// the packages' CommonJS builds, resolved from .toolroute/npm (not from this file's folder)
const load = async (p) => createRequire(npm + "/")(p);

const [flavour, transport, target, expose, servers] = process.argv.slice(2);
const QUERY = "weather forecast for a city";
const CITY = { city: "Oslo" };
const short = (s, n = 160) => String(s).split(/\s+/).join(" ").slice(0, n);
const text = (r) => (r.content || []).filter((c) => c.type === "text").map((c) => c.text).join("\n");

function refusal(t) {
  try {
    const body = JSON.parse(t);
    if (body && typeof body.error === "string") return `${body.error}: ${short(body.message || "", 120)}`;
  } catch {}
  return null;
}

async function connect() {
  let Client, Stdio, Http, options = {};
  if (flavour === "v1") {
    ({ Client } = await load("@modelcontextprotocol/sdk/client/index.js"));
    ({ StdioClientTransport: Stdio } = await load("@modelcontextprotocol/sdk/client/stdio.js"));
    ({ StreamableHTTPClientTransport: Http } = await load("@modelcontextprotocol/sdk/client/streamableHttp.js"));
  } else {
    ({ Client, StreamableHTTPClientTransport: Http } = await load("@modelcontextprotocol/client"));
    ({ StdioClientTransport: Stdio } = await load("@modelcontextprotocol/client/stdio"));
    if (flavour === "v2-auto") options = { versionNegotiation: { mode: "auto" } };
  }
  const client = new Client({ name: `interop-${flavour}`, version: "1.0.0" }, options);
  let t;
  if (transport === "stdio") {
    const cmd = JSON.parse(target);
    t = new Stdio({ command: cmd[0], args: cmd.slice(1), env: process.env, stderr: "ignore" });
  } else {
    t = new Http(new URL(target));
  }
  await client.connect(t);
  return client;
}

async function cell(client, server) {
  const names = async () => (await client.listTools()).tools.map((x) => x.name);
  const call = async (name, args) => {
    const r = await client.callTool({ name, arguments: args });
    return [Boolean(r.isError), text(r)];
  };
  if (!(await names()).includes("find_tools")) return "fails: find_tools not listed";
  let [err, t] = await call("find_tools", { query: QUERY, k: 10 });
  if (err) return `fails: find_tools: ${short(t)}`;
  const found = (JSON.parse(t).candidates || []).filter((c) => c.server === server).map((c) => c.name);
  if (!found.length) return "fails: find_tools did not return the server's weather tool";
  const name = found[0];
  if (expose === "bind") {
    if (!(await names()).includes(name)) return `fails: ${name} not listed after find_tools`;
    [err, t] = await call(name, CITY);
  } else {
    [err, t] = await call("call_tool", { name, arguments: CITY });
  }
  if (!err && t.includes("sunny in Oslo")) return "works";
  const why = err && refusal(t);
  return why ? `refused: ${why}` : `fails: ${short(t)}`;
}

let client;
try {
  client = await connect();
} catch (e) {
  for (const server of servers.split(",")) {
    console.log(JSON.stringify({ server, cell: `fails: connect: ${short(e && e.message)}` }));
  }
  process.exit(0);
}
for (const server of servers.split(",")) {
  let c;
  try {
    c = await cell(client, server);
  } catch (e) {
    c = `fails: ${short(e && e.message)}`;
  }
  console.log(JSON.stringify({ server, cell: c }));
}
await client.close();
process.exit(0);
