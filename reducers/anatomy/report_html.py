"""`trace anatomy replay --html`: one self-contained HTML file (inline CSS,
JS and SVG; nothing fetched) showing a session's calls as stacked bars of
their context slices, compactions marked, topic changes flagged, and each
call's detail (A.4 fields, slices, what was recognised, the events in
context) when its bar is clicked.

The chart's page position is fixed (CHART_LEFT, CHART_TOP) and written on
the <svg> as data attributes, so a test can find the bars in a screenshot."""
from __future__ import annotations

import html
import math

import orjson

from reducers.anatomy.slices import SLICES

COLORS = {
    "system": "#4e79a7", "workspace": "#f28e2b", "skills": "#b07aa1", "reminders": "#edc948", "tools": "#76b7b2",
    "markers": "#e15759", "recalled": "#ff9da7", "history": "#59a14f", "tool_results": "#9c755f", "user": "#17becf",
    "unlogged": "#bab0ac",
}
CHART_LEFT, CHART_TOP = 16, 112
PLOT_HEIGHT = 260
MARGIN_LEFT, MARGIN_BOTTOM, MARGIN_TOP = 56, 30, 22
_EVENT_ROWS = 400            # events listed per call in the detail panel
_MESSAGE_ROWS = 300


def _nice_tick(value: float) -> float:
    """A round grid step at or above `value`."""
    if value <= 0:
        return 1.0
    exp = 10 ** math.floor(math.log10(value))
    for step in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if step * exp >= value:
            return step * exp
    return 10 * exp


def _short(n: float) -> str:
    for unit, size in (("M", 1_000_000), ("k", 1000)):
        if n >= size:
            return f"{n / size:.1f}".rstrip("0").rstrip(".") + unit
    return f"{n:.0f}"


def _percent(value: float) -> str:
    return f"{value:.0f}%" if abs(value - round(value)) < 0.05 else f"{value:.1f}%"


def _ranges(seqs: list[int]) -> list[list[int]]:
    out: list[list[int]] = []
    for s in seqs:
        if out and s == out[-1][1] + 1:
            out[-1][1] = s
        else:
            out.append([s, s])
    return out


def _script_json(value) -> str:
    """JSON safe inside <script>: no '<', '>' or '&' left to close a tag."""
    text = orjson.dumps(value).decode()
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026") \
        .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _turn_data(n: int, r: dict, seqs: list[int] | None) -> dict:
    a4 = {k: r.get(k) for k in ("turnId", "sessionId", "compactionCycle", "contextUtilPct", "systemPromptBytes",
                                "workspaceFileBytes", "skillBytes", "toolSchemaBytes", "historyEventCount",
                                "markerCount", "userMessageBytes", "topicLabel", "topicTransition")}
    messages = [{"i": m.get("i"), "role": m.get("role"), "bytes": m.get("bytes"), "tokens": m.get("tokens")}
                for m in (r.get("messages") or ())[:_MESSAGE_ROWS]]
    return {"turn": n, "ts": r.get("ts"), "origin": r.get("origin"), "api": r.get("api"), "model": r.get("model"),
            "thread": (r.get("context") or {}).get("thread"), "tokens": r.get("contextTokens"),
            "tokensSource": r.get("contextTokensSource"), "window": r.get("window"), "a4": a4,
            "slices": r.get("slices") or {}, "recognised": (r.get("recognised") or [])[:50],
            "messages": messages, "moreMessages": max(0, len(r.get("messages") or ()) - _MESSAGE_ROWS),
            "events": _ranges(seqs) if seqs is not None else None, "compaction": (r.get("compaction") or {}).get("note"),
            "usage": {k: v for k, v in (r.get("usage") or {}).items() if k != "raw"}}


def render(session_id: str, records: list[dict], rows: list[dict], seqs: list[list[int] | None],
           events: dict[int, dict]) -> str:
    """The page. `rows` are the timeline rows of `records` (same order),
    `seqs` each call's events in context (None: the record names none),
    `events` {seq: {kind, snippet, tokens}} for all of them."""
    n = len(records)
    totals = [max(r.get("contextTokens") or 0, sum(s.get("tokens", 0) for s in (r.get("slices") or {}).values()))
              for r in records]
    peak = max(totals, default=0)
    windows = [r.get("window") for r in records if r.get("window")]
    window = min(windows) if windows else None
    top = max(peak, window if window and window <= 1.25 * max(peak, 1) else 0)
    ymax = 4 * _nice_tick((top * 1.05 if top else 1) / 4)           # four round grid steps
    step = max(4.0, min(34.0, 900.0 / max(n, 1)))
    bar = max(2.0, step * 0.72)
    width = int(MARGIN_LEFT + step * n + 44)
    height = MARGIN_TOP + PLOT_HEIGHT + MARGIN_BOTTOM

    def y(v: float) -> float:
        return MARGIN_TOP + PLOT_HEIGHT * (1 - v / ymax)

    svg: list[str] = []
    shared = window if windows and all(w == window for w in windows) and len(windows) == n else None
    for i in range(5):                                          # grid and axis labels (tokens; % of one shared window)
        v = ymax * i / 4
        svg.append(f'<line class="grid" x1="{MARGIN_LEFT}" x2="{width - 8}" y1="{y(v):.1f}" y2="{y(v):.1f}"/>'
                   f'<text class="axis" x="{MARGIN_LEFT - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{_short(v)}</text>')
        if shared and i:
            svg.append(f'<text class="axis pct" x="{width - 4}" y="{y(v) + 4:.1f}" text-anchor="end">'
                       f'{_percent(100 * v / shared)}</text>')
    if window and window <= ymax:
        svg.append(f'<line class="window" x1="{MARGIN_LEFT}" x2="{width - 8}" y1="{y(window):.1f}" y2="{y(window):.1f}"/>'
                   f'<text class="axis" x="{width - 10}" y="{y(window) - 4:.1f}" text-anchor="end">window {_short(window)}</text>')
    label_every = max(1, math.ceil(n / 20))
    for i, (r, row) in enumerate(zip(records, rows)):
        x = MARGIN_LEFT + step * i + (step - bar) / 2
        if row["compacted"]:
            cx = MARGIN_LEFT + step * i
            svg.append(f'<line class="compaction" x1="{cx:.1f}" x2="{cx:.1f}" y1="{MARGIN_TOP - 14}" y2="{MARGIN_TOP + PLOT_HEIGHT}"/>'
                       f'<text class="compaction-label" x="{cx + 3:.1f}" y="{MARGIN_TOP - 6}">compaction {row["compactionCycle"]}</text>')
        tip = (f"call {i + 1}: {r.get('contextTokens') or 0:,} tokens"
               + (f", {r['contextUtilPct']}% of {r['window']:,}" if r.get("contextUtilPct") is not None else "")
               + (f" · {r['topicLabel']}" if r.get("topicLabel") else ""))
        parts = [f'<g class="bar" data-turn="{i + 1}" tabindex="0"><title>{html.escape(tip)}</title>']
        base = 0.0
        for s in SLICES:
            t = (r.get("slices") or {}).get(s, {}).get("tokens", 0)
            if not t:
                continue
            y1, y0 = y(base + t), y(base)
            parts.append(f'<rect class="slice" data-slice="{s}" x="{x:.1f}" y="{y1:.1f}" width="{bar:.1f}" '
                         f'height="{max(y0 - y1, 0.5):.1f}" fill="{COLORS[s]}"/>')
            base += t
        if base < (r.get("contextTokens") or 0):               # tokens no slice accounts for
            y1, y0 = y(r["contextTokens"]), y(base)
            parts.append(f'<rect class="slice" data-slice="other" x="{x:.1f}" y="{y1:.1f}" width="{bar:.1f}" '
                         f'height="{max(y0 - y1, 0.5):.1f}" fill="#d3d3d3"/>')
        if row["topicTransition"]:
            cx, cy = x + bar / 2, y(max(base, r.get("contextTokens") or 0)) - 7
            parts.append(f'<path class="transition" d="M{cx:.1f} {cy - 4:.1f} L{cx + 4:.1f} {cy:.1f} L{cx:.1f} {cy + 4:.1f} '
                         f'L{cx - 4:.1f} {cy:.1f} Z"/>')
        parts.append(f'<rect class="hit" x="{MARGIN_LEFT + step * i:.1f}" y="{MARGIN_TOP}" width="{step:.1f}" '
                     f'height="{PLOT_HEIGHT}"/></g>')
        svg.append("".join(parts))
        if i % label_every == 0:
            svg.append(f'<text class="axis" x="{x + bar / 2:.1f}" y="{MARGIN_TOP + PLOT_HEIGHT + 16}" '
                       f'text-anchor="middle">{i + 1}</text>')

    used = [s for s in SLICES if any((r.get("slices") or {}).get(s) for r in records)]
    legend = "".join(f'<span class="key"><i style="background:{COLORS[s]}"></i>{s.replace("_", " ")}</span>' for s in used)
    models = sorted({r.get("model") for r in records if r.get("model")})
    cycles = sum(1 for row in rows if row["compacted"])
    utils = [r.get("contextUtilPct") for r in records if r.get("contextUtilPct") is not None]
    first = next((r.get("ts") for r in records if r.get("ts")), None)
    last = next((r.get("ts") for r in reversed(records) if r.get("ts")), None)
    facts = [f"{n} call{'s' if n != 1 else ''}", ", ".join(models) or "model not named",
             f"{cycles} compaction{'s' if cycles != 1 else ''}",
             f"peak {max(utils):.1f}% of the window" if utils else "window unknown"]
    if first and last:
        facts.append(f"{first[:16].replace('T', ' ')} – {last[:16].replace('T', ' ')}")
    data = {"turns": [_turn_data(i + 1, r, s) for i, (r, s) in enumerate(zip(records, seqs))],
            "events": {str(k): v for k, v in events.items()}, "colors": COLORS, "slices": list(SLICES)}
    table_rows = "".join(
        f"<tr data-turn=\"{row['turn']}\"><td>{row['turn']}</td><td>{html.escape((row['ts'] or '')[:19].replace('T', ' '))}</td>"
        f"<td>{html.escape(str(row['origin'] or ''))}</td><td>{html.escape(str(row['model'] or ''))}</td>"
        f"<td class=num>{row['contextTokens'] or 0:,}</td>"
        f"<td class=num>{'' if row['contextUtilPct'] is None else row['contextUtilPct']}</td>"
        f"<td class=num>{row['compactionCycle']}</td><td class=num>{row['markerCount'] or 0}</td>"
        f"<td class=num>{'' if row['historyEventCount'] is None else row['historyEventCount']}</td>"
        f"<td>{html.escape(row['topicLabel'] or '')}{' ◆' if row['topicTransition'] else ''}</td></tr>"
        for row in rows)
    return _PAGE.format(
        title=html.escape(f"Context anatomy · {session_id}"), session=html.escape(session_id),
        facts=html.escape(" · ".join(facts)), legend=legend, width=width, height=height, svg="".join(svg),
        left=CHART_LEFT, top=CHART_TOP, table=table_rows, data=_script_json(data),
        css=_CSS.replace("LEFTpx", f"{CHART_LEFT}px").replace("TOPpx", f"{CHART_TOP}px").replace("HEIGHTpx", f"{height}px"),
        js=_JS.replace("__ROWS__", str(_EVENT_ROWS)))


_CSS = """
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d2430;background:#fff}
header{position:absolute;left:0;top:0;height:100px;width:100%;padding:14px 16px 0;border-bottom:1px solid #e3e6ea}
h1{margin:0;font-size:20px}
.sub{margin:2px 0 0;color:#5b6472}
#legend{margin-top:6px;font-size:12px;color:#39414d}
.key{margin-right:12px;white-space:nowrap}
.key i{display:inline-block;width:10px;height:10px;margin-right:4px;border-radius:2px;vertical-align:-1px}
#chart{position:absolute;left:LEFTpx;top:TOPpx;right:16px;overflow-x:auto}
main{padding-top:calc(TOPpx + HEIGHTpx + 24px);padding-left:16px;padding-right:16px}
svg text{font:11px system-ui,sans-serif;fill:#5b6472}
.grid{stroke:#eef0f3}
.window{stroke:#8a93a1;stroke-dasharray:5 4}
.compaction{stroke:#c0392b;stroke-width:1.5;stroke-dasharray:3 3}
svg text.compaction-label{fill:#c0392b;font-weight:600}
.transition{fill:#1d2430}
.bar{cursor:pointer}
.bar .hit{fill:transparent}
.bar:hover .slice,.bar.on .slice{filter:brightness(.85)}
.bar.on .hit{fill:rgba(29,36,48,.06)}
#detail{border:1px solid #e3e6ea;border-radius:6px;padding:12px 14px;min-height:60px}
#detail h2{margin:0 0 6px;font-size:16px}
.cols{display:flex;flex-wrap:wrap;gap:18px}
.cols>div{flex:1 1 300px;min-width:260px}
table{border-collapse:collapse;font-size:12px;width:100%}
td,th{padding:2px 6px;border-bottom:1px solid #f0f1f4;text-align:left;vertical-align:top}
th{color:#5b6472;font-weight:600}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.ev{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:11.5px}
.ev.marker td{color:#c0392b}
.note{color:#5b6472}
details{margin-top:16px}
#all tr{cursor:pointer}
"""

_JS = r"""
const D=JSON.parse(document.getElementById('anatomy-data').textContent);
const esc=s=>String(s??'').replace(/[&<>"]/g,c=>({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'}[c]));
const fmt=n=>n==null?'–':Number(n).toLocaleString('en-US');
function seqs(r){const o=[];for(const [a,b] of r){for(let s=a;s<=b;s++){o.push(s)}}return o}
function show(n){
  const t=D.turns[n-1];if(!t)return;
  document.querySelectorAll('.bar.on').forEach(b=>b.classList.remove('on'));
  const bar=document.querySelector('.bar[data-turn="'+n+'"]');if(bar)bar.classList.add('on');
  const total=Object.values(t.slices).reduce((a,s)=>a+(s.tokens||0),0)||1;
  let h='<h2>Call '+n+' <span class="note">'+esc(t.ts||'')+' · '+esc(t.origin)+' · '+esc(t.api||'')+' · '+esc(t.model||'model not named')+(t.thread&&t.thread!=='main'&&t.thread!=='pack'?' · thread '+esc(t.thread):'')+'</span></h2>';
  h+='<p>'+fmt(t.tokens)+' tokens in context ('+esc(t.tokensSource)+')'+(t.window?', window '+fmt(t.window)+' → '+esc(t.a4.contextUtilPct)+'%':', window unknown')+'</p>';
  if(t.compaction)h+='<p class="note">Compacted before this call: '+esc(t.compaction)+'</p>';
  h+='<div class="cols"><div><table><tr><th>A.4 field</th><th>value</th></tr>';
  for(const [k,v] of Object.entries(t.a4))h+='<tr><td>'+esc(k)+'</td><td class="num">'+esc(v==null?'–':v)+'</td></tr>';
  h+='</table></div><div><table><tr><th>slice</th><th class="num">tokens</th><th class="num">bytes</th><th class="num">share</th></tr>';
  for(const s of D.slices){const c=t.slices[s];if(!c)continue;
    h+='<tr><td><span class="key"><i style="background:'+D.colors[s]+'"></i>'+esc(s)+'</span></td><td class="num">'+fmt(c.tokens)+'</td><td class="num">'+fmt(c.bytes)+'</td><td class="num">'+(100*c.tokens/total).toFixed(1)+'%</td></tr>'}
  h+='</table>';
  if(t.usage&&Object.keys(t.usage).length){h+='<p class="note">usage: '+Object.entries(t.usage).map(([k,v])=>esc(k)+' '+fmt(v)).join(' · ')+'</p>'}
  if(t.recognised.length){h+='<p class="note">recognised: '+t.recognised.map(f=>esc(f.what)+(f.path?' '+esc(f.path):'')+(f.name?' '+esc(f.name):'')+' ('+fmt(f.bytes)+' B)').join(', ')+'</p>'}
  h+='</div></div>';
  if(t.events){const list=seqs(t.events);
    h+='<h3>In context: '+list.length+' event'+(list.length==1?'':'s')+'</h3><table>';
    for(const s of list.slice(0,__ROWS__)){const e=D.events[s]||{};
      h+='<tr class="ev'+(e.kind==='marker'?' marker':'')+'"><td class="num">'+s+'</td><td>'+esc(e.kind)+'</td><td class="num">'+fmt(e.tokens)+'</td><td>'+esc(e.snippet)+'</td></tr>'}
    h+='</table>';if(list.length>__ROWS__)h+='<p class="note">… '+(list.length-__ROWS__)+' more: trace anatomy replay --turn '+n+'</p>'}
  else if(t.messages.length){h+='<h3>Messages sent: '+t.messages.length+(t.moreMessages?' (+'+t.moreMessages+')':'')+'</h3><table><tr><th>#</th><th>role</th><th class="num">bytes</th><th class="num">tokens</th></tr>';
    for(const m of t.messages)h+='<tr class="ev"><td>'+esc(m.i)+'</td><td>'+esc(m.role)+'</td><td class="num">'+fmt(m.bytes)+'</td><td class="num">'+fmt(m.tokens)+'</td></tr>';
    h+='</table>'}
  document.getElementById('detail').innerHTML=h;
}
document.querySelectorAll('.bar').forEach(b=>{b.addEventListener('click',()=>show(+b.dataset.turn));
  b.addEventListener('keydown',e=>{if(e.key==='Enter')show(+b.dataset.turn)})});
document.querySelectorAll('#all tr[data-turn]').forEach(r=>r.addEventListener('click',()=>{show(+r.dataset.turn);window.scrollTo(0,0)}));
const opened=location.hash.match(/turn=(\d+)/);if(opened)show(+opened[1]);
"""

_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>{title}</title><style>{css}</style></head>
<body>
<header><h1>Context anatomy</h1><p class="sub">session {session} · {facts}</p><div id="legend">{legend}<span class="key">◆ topic change</span><span class="key" style="color:#c0392b">┆ compaction</span></div></header>
<div id="chart"><svg id="anatomy-chart" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" data-page-left="{left}" data-page-top="{top}" role="img" aria-label="context slices per call">{svg}</svg></div>
<main><section id="detail"><p class="note">Click a bar to see what that call had in context.</p></section>
<details><summary>All calls</summary><table id="all"><tr><th>call</th><th>time</th><th>origin</th><th>model</th><th class="num">tokens</th><th class="num">util %</th><th class="num">cycle</th><th class="num">markers</th><th class="num">events</th><th>topic</th></tr>{table}</table></details>
</main>
<script type="application/json" id="anatomy-data">{data}</script>
<script>{js}</script>
</body></html>
"""
