// Statecraft designer: diagnostics, inline forms, the schema builder. Plain JS; htmx does the
// server round trips; the editors (CodeMirror) are static/js/editor.bundle.js (frontend/).
(function () {
  "use strict";

  // ------------------------------------------------------------ the newest answer wins, nothing aborted

  // A region asked again while its answer is on the way (typing, a second change, a
  // double-click) shows the newest answer. hx-sync "replace" did that by aborting the request
  // in flight, and htmx logs every abort as an error (htmx:sendAbort) in the console. These
  // regions queue instead (hx-sync "…:queue last": the newest request waits for the one in
  // flight; htmx:confirm fires for each one asked), and an answer overtaken by a newer
  // request is not swapped: the request queued behind it answers instead.
  const asked = new WeakMap(); // the hx-sync element -> how many requests were asked of it
  function syncOf(elt) {
    const spec = elt instanceof Element ? elt.getAttribute("hx-sync") : null;
    if (!spec || !/:\s*queue\b/.test(spec)) return null;
    const selector = spec.split(":")[0].trim();
    return selector === "this" ? elt : document.querySelector(selector);
  }
  document.body.addEventListener("htmx:confirm", (e) => {
    const sync = syncOf(e.detail.elt);
    if (sync) asked.set(sync, (asked.get(sync) || 0) + 1);
  });
  document.body.addEventListener("htmx:beforeRequest", (e) => {
    const sync = syncOf(e.detail.elt);
    if (sync && e.detail.requestConfig) e.detail.requestConfig.asked = { sync, count: asked.get(sync) };
  });
  document.body.addEventListener("htmx:beforeSwap", (e) => {
    const mine = e.detail.requestConfig && e.detail.requestConfig.asked;
    if (mine && asked.get(mine.sync) > mine.count) e.detail.shouldSwap = false;
  });

  // The page's language: Django's JavaScript catalog (/jsi18n/, loaded by base.html) defines
  // gettext and interpolate; without it the English text stands.
  const gettext = window.gettext || ((text) => text);
  const interpolate = window.interpolate || ((format, values) => format.replace(/%\((\w+)\)s/g, (m, key) => values[key]));
  const tr = (format, values) => interpolate(format, values, true);

  function escapeHtml(text) {
    return text.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]));
  }

  // ------------------------------------------------------------ diagnostics: jump, announce

  document.addEventListener("click", (e) => {
    // A problem in the instructions moves the editor's cursor to it (the editor is
    // static/js/editor.bundle.js, CodeMirror); a problem in a tool's code opens the tool.
    const jump = e.target.closest(".diag-jump");
    if (jump && jump.dataset.codeUrl) {
      // A problem in a tool's code: open the tool's form with the caret on that line.
      const target = document.querySelector(jump.dataset.codeTarget);
      if (target && !target.classList.contains("editing")) {
        htmx.ajax("GET", jump.dataset.codeUrl, { target: jump.dataset.codeTarget, swap: "outerHTML" });
      } else if (target) {
        const field = target.querySelector("textarea[data-code]");
        if (field && field.cmView) window.statecraft.goToLine(field.cmView, new URL(jump.dataset.codeUrl, location.href));
      }
      return;
    }
    const editor = window.statecraft && window.statecraft.instructions;
    if (!jump || !editor || jump.dataset.start === "") return;
    const start = Number(jump.dataset.start), end = Number(jump.dataset.end || start);
    editor.jumpTo(start, end);
  });

  let lastAnnounced = "";
  let previewScroll = 0;
  document.body.addEventListener("htmx:beforeSwap", (e) => {
    const pane = document.querySelector(".pane-preview");
    if (pane && e.detail.target && e.detail.target.id === "preview-panel") previewScroll = pane.scrollTop;
  });

  // A type change swaps the default's widget (.default-field) for the new type's, drawn by
  // the server with the default sent. Text typed into the old widget after the request left
  // is not in that answer: the answer is not swapped (the widget being typed in stays), and
  // the change is sent again with the text, so the new widget comes back holding it (a
  // tester's default that vanished). The server's HTML is swapped as sent, never rewritten;
  // the field's id is stable, so htmx keeps the focus and the caret in it.
  const DEFAULT_TEXT = "textarea[name=default], input[name=default]:not([type=radio])";
  document.body.addEventListener("htmx:beforeSwap", (e) => {
    const old = e.detail.target;
    if (!(old instanceof Element) || !old.classList.contains("default-field")) return;
    const typed = old.querySelector(DEFAULT_TEXT);
    const config = e.detail.requestConfig;
    const sent = config && config.formData;
    if (!typed || !sent || typeof sent.get !== "function" || sent.get("default") === null) return;
    if (typed.value === sent.get("default") || !config.elt.isConnected) return;
    e.detail.shouldSwap = false;
    htmx.trigger(config.elt, "change");
  });

  // A refusal over a rate limit (429) is not swapped by htmx: say it where the answer went.
  document.body.addEventListener("htmx:responseError", (e) => {
    const xhr = e.detail.xhr;
    const target = e.detail.target;
    if (!xhr || xhr.status !== 429 || !target) return;
    let note = target.querySelector(":scope > .rate-limit-note");
    if (!note) {
      note = document.createElement("p");
      note.className = "diag-inline diag-error rate-limit-note";
      note.setAttribute("role", "alert");
      target.prepend(note);
    }
    note.textContent = xhr.responseText;
  });

  document.body.addEventListener("htmx:afterSwap", (e) => {
    const target = e.detail.target;
    if (target && target.id === "preview-panel" || document.getElementById("preview-panel") === e.detail.elt) {
      const pane = document.querySelector(".pane-preview");
      if (pane) pane.scrollTop = previewScroll;
    }
    const counts = document.querySelector(".diag-counts");
    const announcer = document.getElementById("announcer");
    if (counts && announcer) {
      const text = counts.textContent.replace(/\s+/g, " ").trim();
      if (text !== lastAnnounced) { announcer.textContent = tr(gettext("Problems: %(counts)s"), { counts: text }); lastAnnounced = text; }
    }
    const focus = e.detail.elt && e.detail.elt.querySelector && (e.detail.elt.querySelector("[data-autofocus]") || (e.detail.target && e.detail.target.querySelector && e.detail.target.querySelector("[data-autofocus]")));
    // A form opened at a line of its code (a problem's "line 3:5") keeps the caret there.
    const atLine = e.detail.elt && e.detail.elt.querySelector && e.detail.elt.querySelector("[data-line]");
    initForms(document);
    // A form back with errors: the first field in error has the focus (where the fix is
    // typed), not the name; a code field's is its editor.
    const root = e.detail.elt && e.detail.elt.querySelector ? e.detail.elt : null;
    const invalid = root && root.querySelector("[aria-invalid=true]");
    if (invalid && !atLine) {
      const editorOf = invalid.hidden && invalid.parentElement && invalid.parentElement.querySelector(".cm-content");
      (editorOf || invalid).focus();
    } else if (focus && !atLine) { focus.focus(); if (focus.select) focus.select(); }
    wideCode();
  });

  // Code gets a wide editor: a form with Python code open in the left pane widens it.
  function wideCode() {
    const designer = document.querySelector("main.designer, .designer");
    if (designer) designer.classList.toggle("wide-code", Boolean(document.querySelector(".pane-side li.editing .cm-field-python, .pane-side li.editing textarea[data-code=python]")));
  }
  document.body.addEventListener("htmx:afterSettle", wideCode);

  // A Run all link to a failing step (#expect-step-N): the conversation loads after the
  // page, so the browser found no such anchor; bring the step into view once it is there.
  let stepShown = false;
  document.body.addEventListener("htmx:afterSettle", () => {
    if (stepShown || !/^#expect-step-\d+$/.test(location.hash)) return;
    const step = document.getElementById(location.hash.slice(1));
    if (!step) return;
    stepShown = true;
    step.scrollIntoView({ block: "center" });
    step.classList.add("linked-step");
  });

  // ------------------------------------------------------------ filter box over the left pane

  function applyFilter() {
    const box = document.getElementById("side-filter");
    if (!box) return;
    const wanted = box.value.trim().toLowerCase();
    document.querySelectorAll(".pane-side .item-list > li.item:not(.editing)").forEach((li) => {
      const name = li.querySelector(".item-name");
      li.hidden = Boolean(wanted) && !(name && name.textContent.toLowerCase().includes(wanted));
    });
  }
  document.addEventListener("input", (e) => { if (e.target.id === "side-filter") applyFilter(); });
  document.body.addEventListener("htmx:afterSettle", applyFilter);

  // ------------------------------------------------------------ typed text in an open form is never dropped silently

  function markDirty(e) {
    const form = e.target.closest && e.target.closest("[data-inline-form]");
    if (form) form.dataset.dirty = "1";
  }
  document.addEventListener("input", markDirty);
  document.addEventListener("change", markDirty);
  document.addEventListener("submit", (e) => { if (e.target.dataset) delete e.target.dataset.dirty; }, true);
  window.addEventListener("beforeunload", (e) => {
    const open = Array.from(document.querySelectorAll("[data-inline-form][data-dirty]")).filter((f) => f.isConnected);
    if (!open.length) return;
    e.preventDefault();
    e.returnValue = "";
  });

  // ------------------------------------------------------------ inline forms

  document.addEventListener("keydown", (e) => {
    if (e.key !== "Escape") return;
    // Escape in a code editor is the editor's (Escape then Tab leaves it): never a Cancel.
    if (e.target.closest && e.target.closest(".cm-editor")) return;
    const form = e.target.closest && e.target.closest("[data-inline-form]");
    if (!form) return;
    const cancel = form.querySelector("[data-cancel]");
    if (cancel) { e.preventDefault(); cancel.click(); }
  });

  // Save or Cancel of an inline form replaces it: focus goes back to what opened it (the
  // row's ✎, or the list's +), never to the page's start.
  let focusAfter = null;
  document.body.addEventListener("htmx:beforeRequest", (e) => {
    const elt = e.detail.elt;
    const form = elt && elt.closest && elt.closest("[data-inline-form]");
    if (!form) return;
    const row = form.closest("li.item");
    const section = form.closest("section, details");
    focusAfter = { elt, id: row && row.id, section: section && section.id };
  });
  document.body.addEventListener("htmx:afterSettle", (e) => {
    // Only the settling of the form's own request (other regions settle meanwhile).
    if (!focusAfter || !e.detail.requestConfig || e.detail.requestConfig.elt !== focusAfter.elt) return;
    const wanted = focusAfter;
    focusAfter = null;
    const active = document.activeElement;
    // Something has the focus already (the form came back with an error and its field).
    if (active && active !== document.body && active.isConnected) return;
    const row = wanted.id && !/-new$/.test(wanted.id) ? document.getElementById(wanted.id) : null;
    const section = wanted.section ? document.getElementById(wanted.section) : null;
    const target = (row && row.querySelector(".item-actions a, .item-actions button"))
      || (section && section.querySelector(".side-head a.btn-icon, :scope > a.btn, #conversation-controls a.btn"));
    if (target) target.focus();
  });

  document.addEventListener("click", (e) => {
    // A Cancel that only empties a region (no server round trip): data-clear="#selector".
    const button = e.target.closest && e.target.closest("[data-clear]");
    if (!button) return;
    const region = document.querySelector(button.dataset.clear);
    if (region) region.innerHTML = "";
  });

  document.addEventListener("keydown", (e) => {
    // Ctrl/Cmd+Enter submits an inline form from a textarea (Enter already submits from inputs).
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      const form = e.target.closest && e.target.closest("[data-inline-form]");
      if (form) { e.preventDefault(); form.requestSubmit(); }
    }
  });

  function initForms(root) {
    root.querySelectorAll("[data-kind-select]").forEach((select) => {
      const form = select.closest("form");
      const apply = () => form.querySelectorAll("[data-kind]").forEach((el) => { el.hidden = el.dataset.kind !== select.value; });
      if (!select.dataset.bound) { select.addEventListener("change", apply); select.dataset.bound = "1"; }
      apply();
    });
    root.querySelectorAll("[data-schema-editor]").forEach(initSchemaEditor);
  }

  // ------------------------------------------------------------ schema builder (form <-> JSON, nested)

  const PROP_TYPES = ["string", "number", "integer", "boolean", "object", "array"];
  const ITEM_TYPES = ["string", "number", "integer", "boolean", "object"];

  function initSchemaEditor(form) {
    if (form.dataset.bound) return;
    form.dataset.bound = "1";
    const json = form.querySelector("[data-schema-json]");
    const rows = form.querySelector(".builder-rows");
    const builder = form.querySelector("[data-schema-builder]");

    function parse() { try { const v = JSON.parse(json.value); return v && typeof v === "object" && !Array.isArray(v) ? v : null; } catch (e) { return null; } }
    function at(root, path) { let node = root; for (const key of path) { node = node && node[key]; } return node; }
    function typeOf(p) { return Array.isArray(p.type) ? p.type.find((t) => t !== "null") || "string" : (p.type || (p.properties ? "object" : "string")); }
    // The JSON field may be a CodeMirror editor (editor.bundle.js): "field-set" tells it.
    function write(schema) { json.value = JSON.stringify(schema, null, 2); json.dispatchEvent(new Event("field-set")); }
    const FORMATS = ["", "date", "date-time", "time", "email", "uri", "uuid", "hostname", "ipv4", "ipv6"];
    function constraints(p, label) {
      const type = typeOf(p);
      if (type === "string") {
        return `<select class="builder-format" aria-label="${tr(gettext("Format of %(name)s"), { name: label })}" data-f="format">` +
          FORMATS.map((f) => `<option value="${f}"${(p.format || "") === f ? " selected" : ""}>${f || gettext("any format")}</option>`).join("") + `</select>` +
          `<input class="builder-pattern mono" aria-label="${tr(gettext("Pattern of %(name)s"), { name: label })}" placeholder="${gettext("pattern (regex)")}" value="${escapeHtml(p.pattern || "")}" data-f="pattern">`;
      }
      if (type === "number" || type === "integer") {
        const value = (v) => (v === undefined ? "" : escapeHtml(String(v)));
        return `<input class="builder-min mono" inputmode="decimal" aria-label="${tr(gettext("Minimum of %(name)s"), { name: label })}" placeholder="${gettext("min")}" value="${value(p.minimum)}" data-f="minimum">` +
          `<input class="builder-max mono" inputmode="decimal" aria-label="${tr(gettext("Maximum of %(name)s"), { name: label })}" placeholder="${gettext("max")}" value="${value(p.maximum)}" data-f="maximum">`;
      }
      return "";
    }
    function options(list, selected) { return list.map((t) => `<option${t === selected ? " selected" : ""}>${t}</option>`).join(""); }

    function renderObject(schema, objPath, depth) {
      const obj = at(schema, objPath) || {};
      const props = obj.properties || {};
      const required = new Set(obj.required || []);
      let html = "";
      Object.keys(props).forEach((name) => {
        const p = props[name] || {};
        const path = objPath.concat(["properties", name]);
        const type = typeOf(p);
        const label = escapeHtml(name);
        const enc = escapeHtml(JSON.stringify(path));
        html += `<div class="builder-row" data-depth="${depth}" data-path="${enc}">` +
          `<input class="mono" aria-label="${gettext("Property name")}" value="${label}" data-f="name">` +
          `<select aria-label="${tr(gettext("Type of %(name)s"), { name: label })}" data-f="type">${options(PROP_TYPES, type)}</select>` +
          `<input type="checkbox" aria-label="${tr(gettext("%(name)s is required"), { name: label })}" title="${gettext("required")}" data-f="required"${required.has(name) ? " checked" : ""}>` +
          `<button type="button" class="btn btn-icon btn-quiet" aria-label="${tr(gettext("Remove %(name)s"), { name: label })}" data-f="remove">×</button>` +
          `<input class="builder-desc" aria-label="${tr(gettext("Description of %(name)s"), { name: label })}" placeholder="${gettext("description")}" value="${escapeHtml(p.description || "")}" data-f="description">` +
          (type === "array"
            ? `<label class="builder-items small">${gettext("items")} <select aria-label="${tr(gettext("Item type of %(name)s"), { name: label })}" data-f="items">${options(ITEM_TYPES, typeOf(p.items || {}))}</select></label>`
            : (type === "object" ? "" : `<input class="builder-enum mono" aria-label="${tr(gettext("Allowed values of %(name)s"), { name: label })}" placeholder="${gettext("enum: a, b, c")}" value="${escapeHtml((p.enum || []).join(", "))}" data-f="enum">`)) +
          constraints(p, label) +
          `</div>`;
        if (type === "object") html += renderObject(schema, path, depth + 1) + addButton(path, depth + 1, name);
        if (type === "array" && p.items && typeOf(p.items) === "object") {
          html += renderObject(schema, path.concat(["items"]), depth + 1) + addButton(path.concat(["items"]), depth + 1, tr(gettext("%(name)s items"), { name }));
        }
      });
      return html;
    }

    // A renamed property keeps its rows: their paths and labels change in place, so the
    // click that ended the rename (on the property's required box, say) still lands.
    function renamePaths(oldPath, newPath, oldName, newName, row) {
      const prefix = JSON.stringify(oldPath).slice(0, -1);
      const swap = (value) => {
        const path = JSON.parse(value);
        return JSON.stringify(newPath.concat(path.slice(oldPath.length)));
      };
      rows.querySelectorAll("[data-path], [data-add]").forEach((el) => {
        const key = el.dataset.path !== undefined ? "path" : "add";
        const value = el.dataset[key];
        if (value === JSON.stringify(oldPath) || value.startsWith(prefix + ",")) el.dataset[key] = swap(value);
      });
      row.querySelectorAll("[aria-label]").forEach((el) => {
        const text = el.getAttribute("aria-label");
        if (text.endsWith(" " + oldName)) el.setAttribute("aria-label", text.slice(0, -oldName.length) + newName);
        else if (text.startsWith(oldName + " ")) el.setAttribute("aria-label", newName + text.slice(oldName.length));
      });
    }

    function addButton(path, depth, owner) {
      return `<button type="button" class="btn btn-small btn-quiet builder-add" data-depth="${depth}" data-add="${escapeHtml(JSON.stringify(path))}">${escapeHtml(tr(gettext("+ property of %(name)s"), { name: owner }))}</button>`;
    }

    function render(focusPath) {
      const schema = parse();
      if (!schema) { builder.classList.add("disabled"); builder.title = gettext("Fix the JSON below to edit properties here"); return; }
      builder.classList.remove("disabled"); builder.title = "";
      rows.innerHTML = renderObject(schema, [], 0);
      // Indentation through the CSSOM: the CSP refuses style attributes in markup.
      rows.querySelectorAll("[data-depth]").forEach((el) => el.style.setProperty("--depth", el.dataset.depth));
      if (focusPath) {
        const row = rows.querySelector(`[data-path="${CSS.escape(JSON.stringify(focusPath))}"] [data-f=name]`);
        if (row) { row.focus(); row.select(); }
      }
    }

    function addProperty(objPath) {
      const schema = parse() || { type: "object", properties: {} };
      const obj = objPath.length ? at(schema, objPath) : schema;
      obj.type = obj.type || "object";
      obj.properties = obj.properties || {};
      let n = 1; while (obj.properties["property_" + n]) n++;
      obj.properties["property_" + n] = { type: "string" };
      write(schema);
      render(objPath.concat(["properties", "property_" + n]));
    }

    function onChange(e) {
      const row = e.target.closest(".builder-row");
      const field = e.target.dataset.f;
      if (!row || !field) return;
      const schema = parse();
      if (!schema) return;
      const path = JSON.parse(row.dataset.path);
      const name = path[path.length - 1];
      const parent = at(schema, path.slice(0, -2));
      const prop = at(schema, path);
      if (field === "name") {
        const next = e.target.value.trim();
        if (!next || next === name || parent.properties[next]) { e.target.value = name; return; }
        parent.properties = Object.fromEntries(Object.entries(parent.properties).map(([k, v]) => [k === name ? next : k, v]));
        if (parent.required) parent.required = parent.required.map((r) => (r === name ? next : r));
        write(schema);
        renamePaths(path, path.slice(0, -1).concat([next]), name, next, row);
      } else if (field === "type") {
        const type = e.target.value;
        prop.type = type;
        if (type === "object") { prop.properties = prop.properties || {}; } else { delete prop.properties; delete prop.required; }
        if (type === "array") { prop.items = prop.items || { type: "string" }; } else { delete prop.items; }
        if (type === "object" || type === "array" || type === "boolean") delete prop.enum;
        write(schema); render();
      } else if (field === "items") {
        prop.items = Object.assign({}, prop.items || {}, { type: e.target.value });
        if (e.target.value === "object") prop.items.properties = prop.items.properties || {};
        else { delete prop.items.properties; delete prop.items.required; }
        write(schema); render();
      } else if (field === "format") {
        if (e.target.value) prop.format = e.target.value; else delete prop.format;
        write(schema);
      } else if (field === "required") {
        const req = new Set(parent.required || []);
        if (e.target.checked) req.add(name); else req.delete(name);
        if (req.size) parent.required = Object.keys(parent.properties).filter((k) => req.has(k)); else delete parent.required;
        write(schema);
      }
    }

    function onInput(e) {
      const row = e.target.closest(".builder-row");
      const field = e.target.dataset.f;
      if (!row || !["description", "enum", "pattern", "minimum", "maximum"].includes(field)) return;
      const schema = parse();
      if (!schema) return;
      const prop = at(schema, JSON.parse(row.dataset.path));
      if (field === "description" || field === "pattern") {
        if (e.target.value) prop[field] = e.target.value; else delete prop[field];
      } else if (field === "minimum" || field === "maximum") {
        const number = Number(e.target.value.trim());
        if (e.target.value.trim() !== "" && Number.isFinite(number)) prop[field] = number; else delete prop[field];
      } else {
        const type = typeOf(prop);
        const values = e.target.value.split(",").map((v) => v.trim()).filter(Boolean)
          .map((v) => (type === "number" || type === "integer") && !isNaN(Number(v)) ? Number(v) : v);
        if (values.length) prop.enum = values; else delete prop.enum;
      }
      write(schema);
    }

    rows.addEventListener("change", onChange);
    rows.addEventListener("input", onInput);
    rows.addEventListener("click", (e) => {
      if (e.target.dataset.f === "remove") {
        const schema = parse();
        const path = JSON.parse(e.target.closest(".builder-row").dataset.path);
        const parent = at(schema, path.slice(0, -2));
        const name = path[path.length - 1];
        delete parent.properties[name];
        if (parent.required) { parent.required = parent.required.filter((r) => r !== name); if (!parent.required.length) delete parent.required; }
        write(schema); render();
      } else if (e.target.dataset.add) {
        addProperty(JSON.parse(e.target.dataset.add));
      }
    });
    form.querySelector("[data-add-property]").addEventListener("click", () => addProperty([]));
    json.addEventListener("input", () => render());
    render();
  }

  // ------------------------------------------------------------ Make default: where it acts

  // *Make default* shows only while the picked model is not already the app's default
  // (issue 33, item 12): the picker changes on the page, the panel is not swapped.
  document.addEventListener("change", (e) => {
    if (e.target.id !== "model-picker") return;
    const button = document.getElementById("make-default-model");
    if (button) button.hidden = e.target.value === (button.dataset.defaultModel || "");
  });

  // ------------------------------------------------------------ the right pane's folds

  // A fold button folds its section (issue 33, item 11): the pane's data-collapsed lists the
  // folded sections, the CSS hides them (also once htmx swaps a section in again), and the
  // list is remembered for the user (POST accounts/collapsed).
  function syncFolds(root) {
    const pane = document.querySelector(".pane-preview[data-collapsed]");
    if (!pane) return;
    const folded = pane.dataset.collapsed.split(" ");
    (root || document).querySelectorAll(".pane-fold").forEach((button) => {
      button.setAttribute("aria-expanded", folded.includes(button.dataset.fold) ? "false" : "true");
    });
  }
  document.addEventListener("click", (e) => {
    const button = e.target.closest(".pane-fold");
    if (!button) return;
    e.preventDefault();
    const pane = document.querySelector(".pane-preview[data-collapsed]");
    if (!pane) return;
    const folded = new Set(pane.dataset.collapsed.split(" ").filter(Boolean));
    if (folded.has(button.dataset.fold)) folded.delete(button.dataset.fold); else folded.add(button.dataset.fold);
    pane.dataset.collapsed = [...folded].join(" ");
    syncFolds();
    const token = document.querySelector("[name=csrfmiddlewaretoken]");
    const body = new URLSearchParams({ sections: [...folded].join(",") });
    fetch(pane.dataset.collapseUrl, { method: "POST", body, headers: { "X-CSRFToken": token ? token.value : "" } });
  });
  document.body.addEventListener("htmx:afterSettle", (e) => syncFolds(e.target));
  syncFolds();

  initForms(document);
})();
