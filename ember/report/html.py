"""The report's one HTML file: inline CSS, JS and SVG only, nothing loaded from the network."""
import datetime
import importlib.metadata as md
import json
import os
import platform
import sys
import threading
from html import escape

import numpy as np

import ember
from ember.autograd.profiler_util import _format_memory, _format_time, _format_time_share
from ember.report import _svg
from ember.report._widgets import WIDGETS

_CSS = """
body{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:0;color:#222;background:#fff}
header{background:#1f2d3d;color:#fff;padding:14px 24px}
header h1{margin:0;font-size:22px} header .sub{opacity:.85;font-size:13px;margin-top:4px}
main{padding:8px 24px 40px;max-width:1180px}
section{margin-top:22px} h2{font-size:18px;border-bottom:2px solid #e4e4e4;padding-bottom:4px}
table{border-collapse:collapse;font-size:12px}
th,td{padding:3px 8px;border-bottom:1px solid #eee;text-align:right;white-space:nowrap}
th{background:#f3f5f7;cursor:pointer;user-select:none} th:first-child,td:first-child{text-align:left}
td.name{font-family:Menlo,Consolas,monospace;max-width:420px;overflow:hidden;text-overflow:ellipsis}
tr:hover td{background:#fafbe6}
pre{font-size:11px;background:#f7f7f7;padding:8px;overflow:auto;max-height:420px}
.figs{display:grid;grid-template-columns:1fr 1fr;gap:14px}
figure{margin:0;border:1px solid #e4e4e4;padding:6px;background:#fff}
figure svg{width:100%;height:auto;max-height:420px} figcaption{font-size:12px;color:#555;margin-top:4px}
.chart-wrap{overflow-x:auto;border:1px solid #e4e4e4} .note{font-size:12px;color:#555}
.missing{font-size:13px;color:#a33;padding:30px 10px}
.btn{display:inline-block;background:#2b6cb0;color:#fff;padding:5px 12px;border-radius:4px;text-decoration:none;
font-size:13px;margin-right:8px;border:0;cursor:pointer}
#js-errors{background:#fee;color:#900;padding:6px 24px;font-family:monospace;white-space:pre-wrap}
dl.env{display:grid;grid-template-columns:max-content auto;gap:2px 16px;font-size:13px} dt{color:#555}
"""

# first thing in <head>: any script error, or console.error, lands in the page (the browser test reads it)
_ERROR_JS = """
window.__emberErrors=[];
function __emberRecord(m){window.__emberErrors.push(String(m));var e=document.getElementById('js-errors');
if(e){e.textContent=window.__emberErrors.join('\\n');e.hidden=false;}}
window.onerror=function(msg,src,line,col){__emberRecord(msg+' ('+src+':'+line+':'+col+')');};
window.addEventListener('unhandledrejection',function(ev){__emberRecord('unhandled rejection: '+ev.reason);});
(function(){var ce=console.error;console.error=function(){__emberRecord(Array.prototype.join.call(arguments,' '));
return ce.apply(console,arguments);};})();
"""

_MAIN_JS = """
document.addEventListener('DOMContentLoaded',function(){
  if(window.__emberErrors.length){var e=document.getElementById('js-errors');
    e.textContent=window.__emberErrors.join('\\n');e.hidden=false;}
  var data=document.getElementById('trace-data');
  var link=document.getElementById('download-trace');
  if(data&&link){
    var blob=new Blob([data.textContent],{type:'application/json'});
    link.href=URL.createObjectURL(blob);
    var n=JSON.parse(data.textContent).traceEvents.length;
    document.getElementById('trace-count').textContent=n+' events';
  }
  document.querySelectorAll('table.sortable').forEach(function(t){
    t.querySelectorAll('th').forEach(function(th,i){
      th.addEventListener('click',function(){
        var body=t.tBodies[0],rows=Array.prototype.slice.call(body.rows);
        var asc=th.getAttribute('data-dir')!=='asc';th.setAttribute('data-dir',asc?'asc':'desc');
        rows.sort(function(a,b){
          var x=a.cells[i].getAttribute('data-v'),y=b.cells[i].getAttribute('data-v');
          var r=(x!==null&&y!==null)?(parseFloat(x)-parseFloat(y)):
            a.cells[i].textContent.localeCompare(b.cells[i].textContent);
          return asc?r:-r;});
        rows.forEach(function(r){body.appendChild(r);});
      });
    });
  });
  document.body.setAttribute('data-ready','1');
});
"""

_COLUMNS = ("Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "CPU Mem", "Self CPU Mem",
            "# of Calls")


def _data_v(v):
    return "" if v is None else f' data-v="{v}"'


def op_table_html(averages, row_limit=30):
    """key_averages() as a sortable HTML table with torch's columns (sorted by self CPU time)."""
    rows = sorted(averages, key=lambda e: -e.self_cpu_time_total)
    total = sum(e.self_cpu_time_total for e in averages)
    out = ['<table id="op-table" class="sortable"><thead><tr>',
           "".join(f"<th>{escape(c)}</th>" for c in _COLUMNS), "</tr></thead><tbody>"]
    for e in rows[:row_limit]:
        cells = [(escape(e.key), None, ' class="name"'),
                 (_format_time_share(e.self_cpu_time_total, total), e.self_cpu_time_total, ""),
                 (_format_time(e.self_cpu_time_total), e.self_cpu_time_total, ""),
                 (_format_time_share(e.cpu_time_total, total), e.cpu_time_total, ""),
                 (_format_time(e.cpu_time_total), e.cpu_time_total, ""),
                 (_format_time(e.cpu_time), e.cpu_time, ""),
                 (_format_memory(e.cpu_memory_usage), e.cpu_memory_usage, ""),
                 (_format_memory(e.self_cpu_memory_usage), e.self_cpu_memory_usage, ""),
                 (str(e.count), e.count, "")]
        out.append("<tr>" + "".join(f'<td{cls}{_data_v(v)} title="{t}">{t}</td>' for t, v, cls in cells) + "</tr>")
    out.append("</tbody></table>")
    if len(rows) > row_limit:
        out.append(f'<p class="note">{len(rows) - row_limit} more rows in the text tables below.</p>')
    return "".join(out)


def environment():
    """(name, value) pairs: versions, CPUs, threads, devices."""
    def version(dist):
        try:
            return md.version(dist)
        except md.PackageNotFoundError:
            return "not installed"

    env = [("ember", getattr(ember, "__version__", "?")), ("numpy", np.__version__),
           ("python", f"{platform.python_implementation()} {platform.python_version()}"),
           ("platform", platform.platform()), ("CPU count", str(os.cpu_count())),
           ("CPUs this process may use", str(len(os.sched_getaffinity(0))) if hasattr(os, "sched_getaffinity")
            else str(os.cpu_count())),
           ("Python threads at the end", str(threading.active_count()))]
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        if var in os.environ:
            env.append((var, os.environ[var]))
    try:
        from threadpoolctl import threadpool_info  # lazy: optional, the BLAS threads when installed
        for info in threadpool_info():
            row = (f"{info.get('internal_api')} threads", f"{info.get('num_threads')} ({info.get('prefix')})")
            if row not in env:
                env.append(row)
    except ImportError:
        pass
    for dist in ("numba", "ml_dtypes", "matplotlib"):
        env.append((dist, version(dist)))
    try:
        cuda = ember.cuda.is_available()
        sim = os.environ.get("EMBER_CUDA_SIM") == "1"
        env.append(("CUDA", f"{ember.cuda.device_count()} device(s){' (numba simulator)' if sim else ''}"
                    if cuda else "not available"))
    except Exception:  # noqa: BLE001 - no CUDA runtime: say so
        env.append(("CUDA", "not available"))
    argv = list(sys.argv)
    if argv and argv[0].replace(os.sep, "/").endswith("ember/report/__main__.py"):
        argv[0:1] = ["-m", "ember.report"]
    env.append(("command", " ".join([os.path.basename(sys.executable)] + argv)))
    env.append(("written", datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")))
    return env


def _json_script(obj):
    # "</" would end the <script> element early; JSON allows "\\/" for "/"
    return json.dumps(obj, separators=(",", ":")).replace("</", "<\\/")


def render(*, title, subtitle, averages, text_tables, trace, widgets, workload, env, status=None):
    """The whole page as one string."""
    parts = ['<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
             f"<title>{escape(title)}</title>",
             '<meta name="viewport" content="width=device-width,initial-scale=1">',
             f"<script>{_ERROR_JS}</script><style>{_CSS}</style></head><body>",
             '<div id="js-errors" hidden></div>',
             f'<header><h1>{escape(title)}</h1><div class="sub">{escape(subtitle)}</div></header><main>']
    if status:
        parts.append(f'<p id="status" class="note">{escape(status)}</p>')
    # ---- ops
    parts.append('<section id="ops"><h2>Operators</h2>'
                 '<p class="note">prof.key_averages(), torch\'s columns; click a column to sort.</p>')
    parts.append(op_table_html(averages))
    for label, text in text_tables:
        parts.append(f"<details><summary>{escape(label)}</summary><pre>{escape(text)}</pre></details>")
    parts.append("</section>")
    # ---- widgets
    where = (f"measured on the run's representative op, {escape(workload.label)} "
             f"(the op with the most CPU time that can be called again from its recorded shapes): "
             f"<code>{escape(workload.description)}</code>" if workload.from_run else
             f"the run had no op the report can call again, so a small default workload stands in: "
             f"<code>{escape(workload.description)}</code>")
    parts.append(f'<section id="widgets"><h2>Pictures of the stack</h2><p class="note" id="workload">'
                 f'Each picture is {where}; overhead_curve sweeps <code>{escape(workload.curve_op)}</code>.</p>'
                 '<div class="figs">')
    for key, name, caption in WIDGETS:
        svg, note = widgets.get(key, (None, "not drawn"))
        body = svg if svg else f'<div class="missing">{escape(name)}: not drawn ({escape(note)})</div>'
        parts.append(f'<figure id="w-{key}" class="widget">{body}<figcaption><b>{escape(name)}</b>: '
                     f"{escape(caption)}</figcaption></figure>")
    parts.append("</div></section>")
    # ---- trace
    parts.append('<section id="trace"><h2>Chrome trace</h2><p>'
                 '<a id="download-trace" class="btn" download="ember_trace.json" href="#">Download trace JSON</a>'
                 '<span class="note"><span id="trace-count"></span>: open it in chrome://tracing or Perfetto '
                 '(ui.perfetto.dev, "Open trace file"). Hover a span for its name and duration.</span></p>'
                 '<div class="chart-wrap">')
    parts.append(_svg.timeline_svg(trace))
    parts.append(f'</div><script type="application/json" id="trace-data">{_json_script(trace)}</script></section>')
    # ---- memory
    parts.append('<section id="memory"><h2>Memory over time</h2><p class="note">Bytes allocated by ops inside the '
                 'profiling window (the profiler\'s [memory] events: allocations minus frees).</p>'
                 '<div class="chart-wrap">')
    parts.append(_svg.memory_svg(_svg.memory_points(trace)))
    parts.append("</div></section>")
    # ---- environment
    parts.append('<section id="env"><h2>Environment</h2><dl class="env">')
    parts.append("".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in env))
    parts.append("</dl></section></main>")
    parts.append(f"<script>{_MAIN_JS}</script></body></html>")
    return "".join(parts)
