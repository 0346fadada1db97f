// The MCP TypeScript SDK's v2 client (@modelcontextprotocol/client) against a server's URL, for
// tests/test_mcp_server_interop.py: `node mcp_ts_client.mjs URL MODE` (MODE: legacy, auto, or a
// revision to pin) connects, lists and calls the interop server's tools (progress, elicitation,
// sampling), reads a resource, gets a prompt, asks a completion, cancels a call that hangs, and
// prints one JSON object of what it saw on stdout.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const [url, mode] = process.argv.slice(2);
const versionNegotiation = mode === 'legacy' ? { mode: 'legacy' } : mode === 'auto' ? { mode: 'auto' } : { mode: { pin: mode } };
const client = new Client(
  { name: 'ts-interop', version: '1.0.0' },
  { capabilities: { elicitation: {}, sampling: {} }, versionNegotiation }
);
client.setRequestHandler('elicitation/create', async () => ({ action: 'accept', content: { name: 'ts' } }));
client.setRequestHandler('sampling/createMessage', async () => ({
  model: 'fake', role: 'assistant', content: { type: 'text', text: 'seven' }
}));
const text = result => result.content.map(block => block.text).join('');
const out = {};
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
out.protocolVersion = client.getNegotiatedProtocolVersion ? client.getNegotiatedProtocolVersion() : null;
out.server = client.getServerVersion();
out.tools = (await client.listTools()).tools.map(tool => tool.name);
out.echo = text(await client.callTool({ name: 'echo', arguments: { text: 'hi' } }));
const progress = [];
out.counts = text(await client.callTool({ name: 'counts', arguments: { steps: 3 } }, { onprogress: p => progress.push(p.progress) }));
out.progress = progress;
out.asks = text(await client.callTool({ name: 'asks', arguments: {} }));
out.samples = text(await client.callTool({ name: 'samples', arguments: { question: 'q' } }));
out.resource = (await client.readResource({ uri: 'test://items/x' })).contents[0].text;
out.prompt = (await client.getPrompt({ name: 'greet', arguments: { name: 'bo' } })).messages[0].content.text;
out.completion = (await client.complete({ ref: { type: 'ref/resource', uri: 'test://items/{item}' }, argument: { name: 'item', value: 'ap' } })).completion.values;
try {
  await client.callTool({ name: 'hangs', arguments: {} }, { timeout: 500 });
  out.hangs = 'answered';
} catch (error) {
  out.hangs = String(error.code ?? error.message);
}
out.cancelledRuns = (await client.callTool({ name: 'was_cancelled', arguments: {} })).structuredContent;
try {
  await client.callTool({ name: 'ends_badly', arguments: {} });
  out.endsBadly = 'answered';
} catch (error) {
  out.endsBadly = error.code;
}
out.after = text(await client.callTool({ name: 'echo', arguments: { text: 'still here' } }));
await client.close();
process.stdout.write(JSON.stringify(out) + '\n');
