// Parse every ```mermaid block of the Markdown files named on the command line with Mermaid's
// own parser (in Node, with jsdom for the DOM it expects), the way GitHub would read them.
//
//   HONE_TEST_MERMAID=DIR node parse.mjs FILE.md…   DIR holds node_modules with mermaid, jsdom
//                                                    and marked (.ci/run installs them)
//   HONE_TEST_MERMAID=DIR node parse.mjs --check    exits 0 when the packages load
//
// For each block it prints one JSON line: the file, the block's number, the diagram's type and
// what Mermaid read from it (a pie's slices, a bar chart's categories and bars, a gantt's tasks
// with their times, a quadrant chart's points and axis labels). A block Mermaid cannot read, a gantt task without valid times or a bar
// chart whose bars do not match its categories ends it with status 1 and the reason on stderr.
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const dir = process.env.HONE_TEST_MERMAID;
if (!dir) {
  console.error('HONE_TEST_MERMAID is not set (the directory with node_modules/mermaid)');
  process.exit(2);
}
const require = createRequire(join(dir, 'node_modules', '.hone'));
const load = async (name) => import(pathToFileURL(require.resolve(name)).href);

const { JSDOM } = await load('jsdom');
const dom = new JSDOM('<!doctype html><html><body></body></html>');
globalThis.window = dom.window;
globalThis.document = dom.window.document;
const { default: mermaid } = await load('mermaid');
const { marked } = await load('marked');
mermaid.initialize({ startOnLoad: false, securityLevel: 'strict' });

if (process.argv[2] === '--check') {
  process.exit(0);
}

/** What Mermaid read from one diagram, or an error string. */
async function read(text) {
  const { diagramType } = await mermaid.parse(text);
  const { db } = await mermaid.mermaidAPI.getDiagramFromText(text);
  const title = db.getDiagramTitle?.() ?? '';
  if (diagramType === 'pie') {
    return { type: diagramType, title, items: [...db.getSections().entries()] };
  }
  if (diagramType === 'xychart') {
    const data = db.getXYChartData();
    const categories = data.xAxis.categories ?? [];
    for (const plot of data.plots) {
      const values = plot.data.filter(([, v]) => typeof v === 'number' && Number.isFinite(v));
      if (plot.data.length !== categories.length || values.length !== categories.length) {
        throw new Error(`${values.length} bars for ${categories.length} categories`);
      }
    }
    return { type: diagramType, title, items: categories, plots: data.plots.map((p) => p.data) };
  }
  if (diagramType === 'gantt') {
    const tasks = db.getTasks().map((t) => {
      const [start, end] = [t.startTime, t.endTime].map((d) => (d instanceof Date ? d.getTime() : NaN));
      if (!Number.isFinite(start) || !Number.isFinite(end) || end < start) {
        throw new Error(`task ${JSON.stringify(t.task)} has no valid time span`);
      }
      return [t.section, t.task.trim(), start, end, t.crit ? 'crit' : t.milestone ? 'milestone' : ''];
    });
    return { type: diagramType, title, items: tasks };
  }
  if (diagramType === 'quadrantChart') {
    const data = db.getQuadrantData();
    const axes = data.axisLabels.map((a) => a.text);
    return { type: diagramType, title, items: data.points.map((p) => p.text.text), axes };
  }
  return { type: diagramType, title, items: [] };
}

let failed = false;
for (const file of process.argv.slice(2)) {
  const tokens = marked.lexer(readFileSync(file, 'utf8'));
  const blocks = [];
  marked.walkTokens(tokens, (t) => {
    if (t.type === 'code' && t.lang === 'mermaid') blocks.push(t.text);
  });
  for (const [i, text] of blocks.entries()) {
    try {
      console.log(JSON.stringify({ file, block: i, ...(await read(text)) }));
    } catch (e) {
      console.error(`${file}: mermaid block ${i} is not valid Mermaid: ${String(e.message ?? e)}\n${text}`);
      failed = true;
    }
  }
}
process.exit(failed ? 1 : 0);
