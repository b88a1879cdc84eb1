// Statecraft's editors, built on CodeMirror 6 and bundled by frontend/build.mjs into
// static/js/editor.bundle.js (committed: `make run` needs no Node; `make assets` rebuilds).
//
// - the instructions: reference colours and lint squiggles from the server's tokens and
//   diagnostics (one lexer, the server's), completion of {{ { {@, undo that survives saves
//   and renames, a save status that tells the truth, no lost work (flush or warn on leaving,
//   three-way merge or side by side on a refused save);
// - the compiled prompt: a read-only view of the text and its spans sent as data;
// - Python (tools, callbacks) and JSON (defaults, schemas, mocks, session values) fields.
import {
  EditorState,
  StateField,
  StateEffect,
  RangeSetBuilder,
  ChangeSet,
  Transaction,
} from "@codemirror/state";
import {
  EditorView,
  ViewPlugin,
  keymap,
  Decoration,
  drawSelection,
  lineNumbers,
  highlightActiveLine,
  highlightActiveLineGutter,
  placeholder,
} from "@codemirror/view";
import { defaultKeymap, history, historyKeymap, indentWithTab } from "@codemirror/commands";
import {
  autocompletion,
  completionKeymap,
  acceptCompletion,
  startCompletion,
} from "@codemirror/autocomplete";
import { setDiagnostics, linter, lintKeymap } from "@codemirror/lint";
import { python } from "@codemirror/lang-python";
import { json, jsonParseLinter } from "@codemirror/lang-json";
import {
  indentUnit,
  syntaxHighlighting,
  defaultHighlightStyle,
  bracketMatching,
  indentOnInput,
} from "@codemirror/language";
import { searchKeymap, highlightSelectionMatches } from "@codemirror/search";
import { diff } from "@codemirror/merge";

// The page's language: Django's JavaScript catalog (/jsi18n/, loaded before this bundle)
// defines gettext and interpolate; without it the English text stands. The strings are
// extracted from this file (makemessages -d djangojs), not from the bundle.
const gettext = (text) => (window.gettext ? window.gettext(text) : text);
const tr = (format, values) =>
  window.interpolate
    ? window.interpolate(format, values, true)
    : format.replace(/%\((\w+)\)s/g, (m, key) => values[key]);

// ------------------------------------------------------------------ shared

function readJson(id, fallback) {
  const node = document.getElementById(id);
  if (!node) return fallback;
  try {
    return JSON.parse(node.textContent);
  } catch (e) {
    return fallback;
  }
}

const baseTheme = EditorView.theme({
  "&": { height: "100%", fontSize: "14px", backgroundColor: "var(--surface)", color: "var(--text)" },
  ".cm-scroller": { fontFamily: "var(--mono)", lineHeight: "1.6" },
  ".cm-content": { caretColor: "var(--text)" },
  "&.cm-focused": { outline: "none" },
  // The caret blinks by a timer (quietCaretBlink), not by CodeMirror's CSS animation.
  ".cm-cursorLayer": { animation: "none !important" },
  ".cm-gutters": { backgroundColor: "var(--surface)", color: "var(--muted)", border: "none" },
  ".cm-activeLine": { backgroundColor: "transparent" },
  ".cm-tooltip": { backgroundColor: "var(--surface)", border: "1px solid var(--border)", borderRadius: "6px" },
  ".cm-tooltip-autocomplete > ul > li[aria-selected]": { backgroundColor: "var(--accent-soft)", color: "var(--text)" },
  ".cm-completionLabel": { fontFamily: "var(--mono)", fontWeight: "600" },
  ".cm-completionDetail": { color: "var(--muted)", fontStyle: "normal", marginLeft: "1em" },
});

/** The caret, drawn by CodeMirror (drawSelection) but blinked by a timer instead of its
 * infinite CSS animation. A running animation keeps Chromium's compositor producing frames,
 * so each key's frame waited for the next tick (0–16.7 ms), and every key restarted the
 * animation: most of a keystroke's cost over a bare textarea (issue #22, item 9; README,
 * Benchmarks, Editor). The caret stays on while typing and blinks after a pause, as the
 * browser's own caret does; with reduced motion it does not blink. */
const BLINK_IDLE_MS = 1000; // typing pauses this long before the caret blinks
const BLINK_HALF_MS = 600; // on, then off: CodeMirror's default cycle of 1200 ms
const reducedMotion = () => Boolean(window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches);
const quietCaretBlink = ViewPlugin.fromClass(
  class {
    constructor(view) {
      this.view = view;
      this.timer = null;
      this.off = false;
      this.restart();
    }
    update(update) {
      if (update.selectionSet || update.docChanged || update.focusChanged) this.restart();
    }
    show(on) {
      this.off = !on;
      const layer = this.view.scrollDOM.querySelector(":scope > .cm-cursorLayer");
      if (layer) layer.style.visibility = on ? "" : "hidden";
    }
    restart() {
      clearTimeout(this.timer);
      this.timer = null;
      if (this.off) this.show(true);
      if (!this.view.hasFocus || reducedMotion()) return;
      const tick = () => {
        this.show(this.off);
        this.timer = setTimeout(tick, BLINK_HALF_MS);
      };
      this.timer = setTimeout(tick, BLINK_IDLE_MS);
    }
    destroy() {
      clearTimeout(this.timer);
    }
  },
);
/** CodeMirror's drawn selection and caret, the caret blinked by a timer (above). */
const drawnSelection = () => [drawSelection({ cursorBlinkRate: 0 }), quietCaretBlink];

/** Edits that turn `from` into `to`, as few and small as a diff finds (keeps undo precise). */
function changesBetween(from, to) {
  return diff(from, to).map((c) => ({ from: c.fromA, to: c.toA, insert: to.slice(c.fromB, c.toB) }));
}

/** Three-way merge of text: my edits and theirs, both from `base`; null when they overlap. */
export function merge3(base, mine, theirs) {
  if (mine === theirs) return mine;
  if (mine === base) return theirs;
  if (theirs === base) return mine;
  const edits = [
    ...diff(base, mine).map((c) => ({ fromA: c.fromA, toA: c.toA, text: mine.slice(c.fromB, c.toB) })),
    ...diff(base, theirs).map((c) => ({ fromA: c.fromA, toA: c.toA, text: theirs.slice(c.fromB, c.toB) })),
  ].sort((a, b) => a.fromA - b.fromA || a.toA - b.toA);
  let out = "";
  let pos = 0;
  let last = null;
  for (const edit of edits) {
    if (last && edit.fromA === last.fromA && edit.toA === last.toA && edit.text === last.text) continue;
    if (last && (edit.fromA < last.toA || (edit.fromA === last.toA && (edit.fromA === last.fromA || edit.fromA === edit.toA)))) {
      return null; // both sides changed the same place
    }
    out += base.slice(pos, edit.fromA) + edit.text;
    pos = edit.toA;
    last = edit;
  }
  return out + base.slice(pos);
}

// ------------------------------------------------------------------ the instructions editor

const KINDS = ["static", "dynamic", "tool", "agent", "cond"];
const tokenMarks = KINDS.map((k) => Decoration.mark({ class: `hl hl-${k}` }));
const setTokens = StateEffect.define();
const tokenField = StateField.define({
  create: () => Decoration.none,
  update(deco, tr) {
    deco = deco.map(tr.changes);
    for (const e of tr.effects) if (e.is(setTokens)) deco = e.value;
    return deco;
  },
  provide: (f) => EditorView.decorations.from(f),
});

/** Decorations from the server's tokens, [gap, length, kind] triples (gap from the last end),
 * moved through the edits made since the text was sent. */
function tokenDecorations(flat, mapping, length) {
  const builder = new RangeSetBuilder();
  let pos = 0;
  for (let i = 0; i + 2 < flat.length; i += 3) {
    let from = pos + flat[i];
    let to = from + flat[i + 1];
    pos = to;
    if (mapping) {
      // An answer about another text than the edits start from (a rename's refresh that
      // crossed them): its positions lie past that text; the next preview brings the marks.
      if (to > mapping.length) break;
      from = mapping.mapPos(from, 1);
      to = mapping.mapPos(to, -1);
    }
    if (to > from && to <= length) builder.add(from, to, tokenMarks[flat[i + 2]]);
  }
  return builder.finish();
}

function referenceCompletions(context) {
  const data = readJson("completion-data", { variables: [], tools: [], agents: [], agentTools: [] });
  const line = context.state.doc.lineAt(context.pos);
  const before = line.text.slice(Math.max(0, context.pos - line.from - 200), context.pos - line.from);
  let m;
  if ((m = before.match(/\{@(TOOL|AGENT):\s*([^{}\n]*)$/))) {
    const names = m[1] === "TOOL" ? data.tools : data.agents;
    return {
      from: context.pos - m[2].length,
      options: names.map((name) => ({
        label: name,
        detail: m[1] === "TOOL" ? (data.agentTools.includes(name) ? gettext("tool of this agent") : gettext("not attached to this agent")) : gettext("agent"),
        apply: name + "}",
        type: m[1] === "TOOL" ? "function" : "class",
      })),
      validFor: /^[^{}\n]*$/,
    };
  }
  if ((m = before.match(/\{@([A-Za-z]*)$/))) {
    return {
      from: context.pos - m[1].length,
      options: ["TOOL", "AGENT"].map((kind) => ({
        label: kind,
        detail: kind === "TOOL" ? gettext("tool reference") : gettext("sub-agent reference"),
        type: "keyword",
        boost: kind === "TOOL" ? 1 : 0,
        apply: (view, completion, from, to) => {
          view.dispatch({ changes: { from, to, insert: kind + ": " }, selection: { anchor: from + kind.length + 2 }, userEvent: "input.complete" });
          startCompletion(view);
        },
      })),
      validFor: /^[A-Za-z]*$/,
    };
  }
  const variables = (close) =>
    data.variables.map((v) => ({
      label: v.name,
      detail: v.type + (v.default !== "" ? " · " + v.default : ""),
      apply: v.name + close,
      type: "variable",
    }));
  if ((m = before.match(/\{\{\s*([A-Za-z0-9_.]*)$/))) {
    return { from: context.pos - m[1].length, options: variables("}}"), validFor: /^[A-Za-z0-9_.]*$/ };
  }
  if ((m = before.match(/(?:^|[^{])\{\s*([A-Za-z0-9_]*)$/))) {
    return { from: context.pos - m[1].length, options: variables("}"), validFor: /^[A-Za-z0-9_]*$/ };
  }
  return null;
}

const STATUS = {
  clean: gettext("All changes saved"),
  dirty: gettext("Unsaved changes"),
  saving: gettext("Saving…"),
  saved: gettext("Saved"),
};

class InstructionsEditor {
  constructor(textarea) {
    this.textarea = textarea;
    this.form = textarea.form;
    this.readOnly = textarea.readOnly;
    this.saveUrl = this.form.dataset.instructionsUrl;
    this.agentId = this.form.dataset.agentId;
    this.base = document.getElementById("instructions-base");
    this.savedText = textarea.value; // the text the server holds, as far as we know
    this.changeCount = 0; // edits since the page loaded
    this.savedCount = 0; // the edit count that was last saved
    this.pending = null; // edits since the text of the preview in flight was taken
    this.saveTimer = null;
    this.saving = null;
    this.conflict = null;
    this.sinceSaved = ChangeSet.empty(textarea.value.length); // edits since savedText
    this.sinceSent = null; // edits since the text of the save in flight
    const host = document.createElement("div");
    host.className = "cm-host";
    textarea.hidden = true;
    textarea.insertAdjacentElement("afterend", host);
    const label = document.querySelector(`label[for="${textarea.id}"]`);
    this.view = new EditorView({
      parent: host,
      state: EditorState.create({
        doc: textarea.value,
        extensions: [
          history(),
          drawnSelection(),
          highlightActiveLine(),
          EditorView.lineWrapping,
          tokenField,
          highlightSelectionMatches(),
          autocompletion({ override: [referenceCompletions], icons: false, activateOnTyping: true, interactionDelay: 0 }),
          keymap.of([
            { key: "Mod-s", preventDefault: true, run: () => (this.save(), true) },
            { key: "Tab", run: acceptCompletion },
            ...completionKeymap,
            ...searchKeymap,
            ...historyKeymap,
            ...lintKeymap,
            ...defaultKeymap,
          ]),
          EditorState.readOnly.of(this.readOnly),
          EditorView.contentAttributes.of({
            id: "instructions-editor",
            "aria-label": label ? label.textContent.trim() : gettext("Instructions"),
            "aria-describedby": textarea.getAttribute("aria-describedby") || "",
            "aria-multiline": "true",
            role: "textbox",
          }),
          baseTheme,
          EditorView.updateListener.of((update) => this.onUpdate(update)),
        ],
      }),
    });
    window.statecraft.instructions = this;
    this.bind();
    this.applyPreviewData();
  }

  text() {
    return this.view.state.doc.toString();
  }

  isDirty() {
    return this.changeCount !== this.savedCount;
  }

  onUpdate(update) {
    if (!update.docChanged) return;
    if (this.pending) this.pending = this.pending.compose(update.changes);
    if (this.sinceSaved) this.sinceSaved = this.sinceSaved.compose(update.changes);
    if (this.sinceSent) this.sinceSent = this.sinceSent.compose(update.changes);
    this.changeCount += 1;
    if (this.readOnly) return;
    if (!this.conflict && this.status !== "dirty") this.setStatus("dirty");
    this.stale = true;
    document.body.dispatchEvent(new CustomEvent("editor-changed"));
    // The preview follows a pause in typing: 150 ms, or 450 ms for a text over 200 KB,
    // whose preview answer (the compiled text, its spans) takes the page ~40 ms to take
    // in: it must not land between the keys of a designer typing.
    clearTimeout(this.previewTimer);
    const pause = this.view.state.doc.length > 200000 ? 450 : 150;
    this.previewTimer = setTimeout(() => htmx.trigger(this.form, "editor-changed"), pause);
    clearTimeout(this.saveTimer);
    this.saveTimer = setTimeout(() => this.save(), 1500);
  }

  setStatus(kind, message) {
    const status = document.getElementById("save-status");
    if (!status) return;
    this.status = kind;
    status.textContent = message || STATUS[kind];
    status.classList.toggle("error-text", kind === "refused");
    status.dataset.state = kind;
  }

  /** The hidden form field follows the editor when the page is idle. Setting a 1 MB
   * textarea's value costs ~20 ms, so it is never done on the way of a keystroke: requests
   * take the text from the editor (bind); the field follows after a save or a merge. */
  scheduleSync() {
    if (this.syncPending) return;
    this.syncPending = true;
    const idle = window.requestIdleCallback || ((fn) => setTimeout(fn, 200));
    idle(() => {
      this.syncPending = false;
      if (!this.stale) return;
      this.stale = false;
      this.textarea.value = this.text();
    }, { timeout: 3000 });
  }

  /** The edits since the saved text as one replacement {from, to, insert} of the saved
   * text (UTF-16 offsets), from the changes themselves (no scan of the text); null when
   * the text is small, the edit big, or its relation to the saved text unknown. */
  editSinceSaved() {
    const changes = this.sinceSaved;
    const doc = this.view.state.doc;
    if (!changes || doc.length < 20000) return null;
    let fromA = Infinity, toA = -1, fromB = Infinity, toB = -1;
    changes.iterChangedRanges((fa, ta, fb, tb) => {
      fromA = Math.min(fromA, fa);
      toA = Math.max(toA, ta);
      fromB = Math.min(fromB, fb);
      toB = Math.max(toB, tb);
    });
    if (toA < 0) return { from: 0, to: 0, insert: "" };
    if (toB - fromB > doc.length / 4) return null;
    return { from: fromA, to: toA, insert: doc.sliceString(fromB, toB) };
  }

  /** Does this htmx request carry the instructions (the preview form, or a region that
   * includes it: the conversation)? */
  carriesInstructions(elt) {
    if (elt === this.form) return true;
    const include = elt && elt.getAttribute ? elt.getAttribute("hx-include") || "" : "";
    return include.includes("#instructions-form");
  }

  bind() {
    // The field has no name while the editor runs: htmx would copy its (1 MB) value into
    // every preview; the editor's text is put in instead, straight from the document.
    this.textarea.removeAttribute("name");
    document.body.addEventListener("htmx:configRequest", (e) => {
      if (!this.carriesInstructions(e.detail.elt)) return;
      const params = e.detail.parameters;
      const put = (key, value) => (params instanceof FormData ? params.set(key, value) : (params[key] = value));
      // A big text goes as its one edit since the last save (a key of a 1 MB text posts a
      // few bytes, and nothing reads the whole text); the whole text when the server asks
      // for it again (409, resend).
      const edit = this.resendWhole ? null : this.editSinceSaved();
      this.resendWhole = false;
      if (edit) {
        put("instructions_from", String(edit.from));
        put("instructions_to", String(edit.to));
        put("instructions_insert", edit.insert);
        put("base_hash", this.base.value);
      } else {
        put("instructions", this.text());
      }
      if (e.detail.elt === this.form) this.pending = ChangeSet.empty(this.view.state.doc.length);
    });
    document.body.addEventListener("htmx:responseError", (e) => {
      const xhr = e.detail.xhr;
      if (!xhr || xhr.status !== 409 || xhr.getResponseHeader("X-Statecraft-Resend") !== "instructions") return;
      this.resendWhole = true;
      htmx.trigger(e.detail.elt, e.detail.elt === this.form ? "input-synced" : "app-changed");
    });
    document.body.addEventListener("htmx:afterSettle", (e) => {
      if (e.detail.target && e.detail.target.id === "preview-panel") this.applyPreviewData();
    });
    const button = document.getElementById("save-instructions");
    if (button) {
      button.addEventListener("click", (e) => {
        e.preventDefault();
        this.save();
      });
    }
    document.body.addEventListener("save-now", () => this.save());
    document.body.addEventListener("app-changed", (e) => this.onAppChanged(e));
    // Leaving the page: a small text is flushed (keepalive), anything else is warned about.
    window.addEventListener("beforeunload", (e) => {
      if (this.readOnly || (!this.isDirty() && !this.conflict)) return;
      const text = this.text();
      const flushed = !this.conflict && new Blob([text]).size < 60000;
      this.keepDraft(flushed);
      if (flushed) {
        this.save({ keepalive: true });
        return;
      }
      e.preventDefault();
      e.returnValue = "";
    });
    this.offerDraft();
  }

  // ---------------------------------------------------------------- drafts (last resort)

  draftKey() {
    return `statecraft:draft:${this.saveUrl}`;
  }

  /** `flushed`: a keepalive save of this text was sent as the page was left. */
  keepDraft(flushed = false) {
    try {
      localStorage.setItem(this.draftKey(), JSON.stringify({ text: this.text(), base: this.base.value, savedText: this.savedText, flushed, at: Date.now() }));
    } catch (e) {
      /* over the quota: the flush or the warning still stand */
    }
  }

  dropDraft() {
    try {
      localStorage.removeItem(this.draftKey());
    } catch (e) {
      /* storage unavailable */
    }
  }

  offerDraft() {
    let draft = null;
    try {
      draft = JSON.parse(localStorage.getItem(this.draftKey()) || "null");
    } catch (e) {
      draft = null;
    }
    if (!draft || draft.text === this.savedText || this.readOnly) {
      this.dropDraft();
      return;
    }
    if (draft.flushed && draft.base === this.base.value) {
      // The save sent on the way out has not landed yet (the page came back first) or was
      // lost: nothing changed on the server since, so this is still my edit of what it
      // holds. Send it again, quietly; if the first one lands meanwhile, the answer (409
      // with the same text) merges to itself.
      this.replaceText(draft.text);
      this.dropDraft();
      this.save();
      return;
    }
    // Text typed before the page was left and never saved: offer it back, merged if it can be.
    const merged = merge3(draft.savedText, draft.text, this.savedText);
    const panel = this.panel(
      "draft",
      gettext("Text you typed here earlier was not saved. It is restored into the editor as an edit you can undo."),
    );
    this.replaceText(merged !== null ? merged : draft.text);
    panel.querySelector(".conflict-note").textContent +=
      merged !== null ? " " + gettext("It was merged with the saved text.") : " " + gettext("It differs from the saved text at the same places: check before saving.");
    this.dropDraft();
  }

  // ---------------------------------------------------------------- saving

  async save(options = {}) {
    if (this.readOnly) return;
    clearTimeout(this.saveTimer);
    if (this.conflict && !options.force) return;
    if (this.saving) {
      this.saveAgain = true;
      return;
    }
    const count = this.changeCount;
    // A text the server refused is not sent again until it changes.
    if (this.refusedCount === count && !options.force) return;
    const text = this.text();
    // URL-encoded: a multipart body would turn every line break into CRLF.
    const body = new URLSearchParams();
    body.append("csrfmiddlewaretoken", this.form.querySelector("[name=csrfmiddlewaretoken]").value);
    body.append("instructions", text);
    body.append("base_hash", this.base.value);
    if (options.keepalive) {
      fetch(this.saveUrl, { method: "POST", body, keepalive: true, headers: { Accept: "application/json" } });
      return;
    }
    this.setStatus("saving");
    this.sinceSent = ChangeSet.empty(text.length);
    this.saving = fetch(this.saveUrl, { method: "POST", body, headers: { Accept: "application/json" } });
    let response;
    let data = {};
    try {
      response = await this.saving;
      data = await response.json().catch(() => ({}));
    } catch (e) {
      response = null;
    }
    this.saving = null;
    const sinceSent = this.sinceSent;
    this.sinceSent = null;
    if (response && response.ok) {
      this.base.value = data.hash;
      this.savedText = text;
      this.sinceSaved = sinceSent;
      this.savedCount = count;
      this.dropDraft();
      this.setStatus(this.isDirty() ? "dirty" : "saved");
      this.scheduleSync();
      document.body.dispatchEvent(new CustomEvent("app-changed", { detail: { instructions: data.instructions || {} } }));
      if (this.isDirty() || this.saveAgain) {
        this.saveAgain = false;
        this.saveTimer = setTimeout(() => this.save(), 300);
      }
    } else if (response && response.status === 409) {
      this.saveAgain = false;
      this.onConflict(data, text);
    } else if (response && response.status >= 400 && response.status < 500 && response.status !== 429) {
      // A refusal of this text (a NUL character, a text over the limit): say why and keep
      // the typing; the same text is not sent again (the next edit saves again).
      this.saveAgain = false;
      this.refusedCount = count;
      const why = data.error || tr(gettext("the server answered %(status)s"), { status: response.status });
      this.setStatus("refused", tr(gettext("Not saved: %(why)s Your text is still here; fix it and it saves again."), { why }));
    } else {
      this.saveAgain = false;
      const why = response ? data.error || tr(gettext("the server answered %(status)s"), { status: response.status }) : gettext("the server could not be reached");
      this.setStatus("refused", tr(gettext("Not saved: %(why)s. Your text is still here; saving again shortly."), { why }));
      this.saveTimer = setTimeout(() => this.save(), 5000);
    }
  }

  // ---------------------------------------------------------------- someone else's change

  /** A refused save: merge their text with mine when the edits do not overlap, else show
   * both side by side and let me choose. Nothing is dropped either way. */
  onConflict(data, mine) {
    const theirs = data.instructions_text;
    const merged = merge3(this.savedText, mine, theirs);
    if (merged !== null) {
      this.adoptTheirs(theirs, data.hash);
      this.replaceText(merged);
      this.setStatus("dirty", gettext("Merged with changes saved elsewhere; saving…"));
      this.save();
      return;
    }
    this.conflict = { theirs, hash: data.hash };
    this.setStatus("refused", gettext("Not saved: changed elsewhere. Your text is kept; compare below."));
    const panel = this.panel("conflict", data.error || gettext("These instructions were changed elsewhere since you opened them."));
    const views = document.createElement("div");
    views.className = "conflict-views";
    views.innerHTML = `<div class="conflict-theirs"><h4>${gettext("Their saved text")}</h4><div class="conflict-view"></div></div>`;
    panel.insertBefore(views, panel.querySelector(".row-actions"));
    this.theirsView = new EditorView({
      parent: views.querySelector(".conflict-view"),
      state: EditorState.create({
        doc: theirs,
        extensions: [EditorState.readOnly.of(true), EditorView.editable.of(false), EditorView.lineWrapping, baseTheme,
          EditorView.contentAttributes.of({ "aria-label": gettext("Their saved text"), id: "theirs-text" })],
      }),
    });
    const actions = panel.querySelector(".row-actions");
    actions.innerHTML =
      `<button type="button" class="btn btn-primary btn-small" data-keep-mine>${gettext("Keep my text (save over theirs)")}</button>` +
      `<button type="button" class="btn btn-quiet btn-small" data-take-theirs>${gettext("Use their text (mine stays in undo)")}</button>`;
    actions.querySelector("[data-keep-mine]").addEventListener("click", () => {
      this.adoptTheirs(theirs, data.hash);
      this.closePanel();
      this.save({ force: true });
    });
    actions.querySelector("[data-take-theirs]").addEventListener("click", () => {
      this.adoptTheirs(theirs, data.hash);
      this.replaceText(theirs);
      this.savedCount = this.changeCount;
      this.closePanel();
      this.setStatus("saved", gettext("Their text is in the editor (Ctrl+Z brings yours back)"));
    });
  }

  adoptTheirs(theirs, hash) {
    this.savedText = theirs;
    this.sinceSaved = null; // the text on screen is not an edit of theirs we know: send it whole
    this.base.value = hash;
    this.conflict = null;
  }

  panel(kind, message) {
    this.closePanel();
    const panel = document.createElement("div");
    panel.className = `conflict conflict-${kind}`;
    panel.id = "editor-conflict";
    panel.setAttribute("role", "alert");
    panel.innerHTML = `<p class="conflict-note"></p><div class="row-actions"><button type="button" class="btn btn-quiet btn-small" data-dismiss>${gettext("Dismiss")}</button></div>`;
    panel.querySelector(".conflict-note").textContent = message;
    panel.querySelector("[data-dismiss]").addEventListener("click", () => this.closePanel());
    this.view.dom.parentElement.insertAdjacentElement("afterend", panel);
    panel.parentElement.classList.add("with-conflict");
    return panel;
  }

  closePanel() {
    if (this.theirsView) {
      this.theirsView.destroy();
      this.theirsView = null;
    }
    const old = document.getElementById("editor-conflict");
    if (old) {
      old.parentElement.classList.remove("with-conflict");
      old.remove();
    }
  }

  /** Put `text` in the editor as an edit (undoable), touching only what differs. */
  replaceText(text) {
    const current = this.text();
    if (current === text) return;
    this.view.dispatch({ changes: changesBetween(current, text), annotations: Transaction.userEvent.of("input.replace") });
  }

  /** A rename elsewhere rewrote the saved instructions: bring them in without losing typing. */
  async onAppChanged(e) {
    const fingerprints = e.detail && e.detail.instructions;
    if (!fingerprints || this.conflict) return;
    const saved = fingerprints[this.agentId];
    if (saved === undefined || saved === this.base.value) return;
    const response = await fetch(this.saveUrl, { headers: { Accept: "application/json" } });
    const data = await response.json();
    const mine = this.text();
    const merged = merge3(this.savedText, mine, data.instructions);
    if (merged === null) {
      this.onConflict({ instructions_text: data.instructions, hash: data.hash }, mine);
      return;
    }
    const wasDirty = this.isDirty();
    this.adoptTheirs(data.instructions, data.hash);
    this.replaceText(merged);
    if (!wasDirty) {
      this.savedCount = this.changeCount;
      clearTimeout(this.saveTimer);
      this.setStatus("saved", gettext("Updated by a rename (Ctrl+Z undoes it here)"));
    }
    this.scheduleSync();
    htmx.trigger(this.form, "input-synced");
  }

  // ---------------------------------------------------------------- the server's view of the text

  applyPreviewData() {
    const data = readJson("preview-data", null);
    if (!data) return;
    const mapping = this.pending;
    const length = this.view.state.doc.length;
    const decorations = tokenDecorations(data.tokens, mapping, length);
    const diagnostics = [];
    for (const d of data.squiggles) {
      let from = d.from;
      let to = Math.max(d.to, d.from);
      if (mapping) {
        if (to > mapping.length) continue; // about another text (see tokenDecorations)
        from = mapping.mapPos(from, 1);
        to = mapping.mapPos(to, -1);
      }
      if (from > length) continue;
      to = Math.min(Math.max(to, from), length);
      diagnostics.push({ from, to, severity: d.severity, message: d.message, source: d.code, renderMessage: () => messageNode(d.message) });
    }
    this.view.dispatch(setDiagnostics(this.view.state, diagnostics), { effects: setTokens.of(decorations) });
    window.statecraft.compiled && window.statecraft.compiled.show(data);
  }

  jumpTo(start, end) {
    const length = this.view.state.doc.length;
    const anchor = Math.min(start, length);
    this.view.dispatch({
      selection: { anchor, head: Math.min(end, length) },
      effects: EditorView.scrollIntoView(anchor, { y: "center" }),
    });
    this.view.focus();
  }
}

// ------------------------------------------------------------------ the compiled prompt

const spanClass = {
  static: (name) => Decoration.mark({ tagName: "mark", class: "ref ref-static", attributes: { title: tr(gettext("from %(reference)s"), { reference: `{{${name}}}` }), "data-ref": name } }),
  dynamic: (name) => Decoration.mark({ class: "chip chip-dynamic", attributes: { title: gettext("dynamic variable — its value arrives as a state update"), "data-ref": name } }),
  tool: (name) => Decoration.mark({ class: "chip chip-tool", attributes: { title: gettext("tool reference"), "data-ref": name } }),
  agent: (name) => Decoration.mark({ class: "chip chip-agent", attributes: { title: gettext("sub-agent reference"), "data-ref": name } }),
  missing: (name) => Decoration.mark({ class: "chip chip-missing", attributes: { title: gettext("no value: stays literally in the prompt"), "data-ref": name } }),
  undeclared: (name) => Decoration.mark({ class: "chip chip-missing", attributes: { title: gettext("no such variable: at run time empty text"), "data-ref": name } }),
};
/** A diagnostic's message for the tooltip: its `code` spans as <code>, the rest as text. */
function messageNode(message) {
  const node = document.createElement("span");
  const pieces = message.split("`");
  if (pieces.length % 2 === 0) return document.createTextNode(message); // an unpaired backtick
  pieces.forEach((piece, i) => {
    if (!piece) return;
    if (i % 2) {
      const code = document.createElement("code");
      code.textContent = piece;
      node.appendChild(code);
    } else node.appendChild(document.createTextNode(piece));
  });
  return node;
}
const SPAN_KINDS = ["static", "dynamic", "tool", "agent", "missing", "undeclared"];
const setSpans = StateEffect.define();
const spanField = StateField.define({
  create: () => Decoration.none,
  update(deco, tr) {
    deco = deco.map(tr.changes);
    for (const e of tr.effects) if (e.is(setSpans)) deco = e.value;
    return deco;
  },
  provide: (f) => EditorView.decorations.from(f),
});

class CompiledView {
  constructor(host) {
    this.host = host;
    this.cache = new Map();
    host.textContent = "";
    this.view = new EditorView({
      parent: host,
      state: EditorState.create({
        doc: "",
        extensions: [
          EditorState.readOnly.of(true),
          EditorView.editable.of(false),
          EditorView.lineWrapping,
          spanField,
          baseTheme,
          // A read-only text box (a document role allows no aria-multiline, which CodeMirror sets).
          EditorView.contentAttributes.of({ "aria-label": gettext("Compiled prompt"), role: "textbox", "aria-readonly": "true" }),
        ],
      }),
    });
    window.statecraft.compiled = this;
  }

  mark(kind, name) {
    const key = kind + "\u0000" + name;
    let deco = this.cache.get(key);
    if (!deco) {
      deco = spanClass[kind](name);
      if (this.cache.size > 5000) this.cache.clear();
      this.cache.set(key, deco);
    }
    return deco;
  }

  /** Show the compiled text: only what changed is replaced, so the scroll position stays. */
  show(data) {
    const old = this.view.state.doc.toString();
    const text = data.text;
    let changes = [];
    if (old !== text) {
      let start = 0;
      const min = Math.min(old.length, text.length);
      while (start < min && old.charCodeAt(start) === text.charCodeAt(start)) start++;
      let end = 0;
      while (end < min - start && old.charCodeAt(old.length - 1 - end) === text.charCodeAt(text.length - 1 - end)) end++;
      changes = { from: start, to: old.length - end, insert: text.slice(start, text.length - end) };
    }
    const builder = new RangeSetBuilder();
    const spans = data.spans;
    let pos = 0;
    for (let i = 0; i + 3 < spans.length; i += 4) {
      const from = pos + spans[i];
      const to = from + spans[i + 1];
      pos = to;
      if (to > from && to <= text.length) builder.add(from, to, this.mark(SPAN_KINDS[spans[i + 2]], data.names[spans[i + 3]]));
    }
    this.view.dispatch({ changes, effects: setSpans.of(builder.finish()) });
    this.host.dataset.length = String(text.length);
  }

  text() {
    return this.view.state.doc.toString();
  }
}

// ------------------------------------------------------------------ Python and JSON fields

let hintCount = 0;

function codeField(textarea) {
  if (textarea.dataset.cmBound) return;
  textarea.dataset.cmBound = "1";
  const language = textarea.dataset.code;
  // The editor takes the field's name for assistive technology: its label, by wrapping or
  // by `for` (the id moves to the editor, so the label points at what is typed in).
  const id = textarea.id;
  const forLabel = id ? document.querySelector(`label[for="${id}"]`) : null;
  const label = forLabel || textarea.closest("label");
  const labelText = label ? (label.querySelector("span") || label).textContent.trim().replace(/\s+/g, " ") : language;
  const host = document.createElement("div");
  host.className = `cm-field cm-field-${language}`;
  if (textarea.getAttribute("aria-invalid")) host.classList.add("invalid");
  textarea.insertAdjacentElement("beforebegin", host);
  // The field stays in the form (hidden) and carries the text; it leaves its label.
  textarea.hidden = true;
  if (id) textarea.removeAttribute("id");
  (textarea.form || host.parentElement).appendChild(textarea);
  // tabindex: a long code line scrolls the field sideways, and a scrolling region needs a
  // focusable element that axe-core recognises (a contenteditable alone is not one).
  const attributes = { "aria-label": labelText, "aria-multiline": "true", role: "textbox", "data-field": textarea.name, tabindex: "0" };
  if (id) attributes.id = id;
  for (const name of ["aria-invalid", "aria-describedby"]) {
    if (textarea.getAttribute(name)) attributes[name] = textarea.getAttribute(name);
  }
  // Tab indents in code: say how to leave the field (CodeMirror's Escape, then Tab).
  const hint = document.createElement("span");
  hint.className = "cm-hint muted small";
  hint.id = `cm-hint-${++hintCount}`;
  hint.textContent = language === "python" ? gettext("Tab indents here; to leave the code, press Esc then Tab.") : gettext("Tab leaves the field.");
  attributes["aria-describedby"] = [attributes["aria-describedby"], hint.id].filter(Boolean).join(" ");
  const extensions = [
    history(),
    drawnSelection(),
    bracketMatching(),
    syntaxHighlighting(defaultHighlightStyle, { fallback: true }),
    baseTheme,
    keymap.of([...searchKeymap, ...historyKeymap, ...lintKeymap, ...defaultKeymap]),
    EditorView.contentAttributes.of(attributes),
    EditorView.updateListener.of((update) => {
      if (!update.docChanged) return;
      textarea.value = update.state.doc.toString();
      // Only what the designer typed is news to the page (not what another script set).
      if (update.transactions.some((tr) => tr.annotation(Transaction.remote))) return;
      textarea.dispatchEvent(new Event("input", { bubbles: true }));
    }),
  ];
  if (language === "python") {
    extensions.push(python(), indentUnit.of("    "), indentOnInput(), lineNumbers(), highlightActiveLineGutter(), keymap.of([indentWithTab]));
  } else {
    extensions.push(json(), linter(jsonLinter(), { delay: 300 }), EditorView.lineWrapping);
  }
  if (textarea.placeholder) extensions.push(placeholder(textarea.placeholder));
  const view = new EditorView({ parent: host, state: EditorState.create({ doc: textarea.value, extensions }) });
  textarea.cmView = view;
  host.insertAdjacentElement("afterend", hint);
  if (textarea.hasAttribute("data-autofocus")) view.focus();
  // Someone else changed the field (the schema builder writes the JSON): follow it.
  textarea.addEventListener("field-set", () => {
    const current = view.state.doc.toString();
    if (current !== textarea.value) view.dispatch({ changes: changesBetween(current, textarea.value), annotations: Transaction.remote.of(true) });
  });
  if (Number(textarea.dataset.line || 0)) goToLine(view, null, textarea.dataset.line, textarea.dataset.column);
}

/** Put the caret on a line and column (1-based) of a code editor, and show it. */
function goToLine(view, url, line, column) {
  if (url) {
    line = url.searchParams.get("line");
    column = url.searchParams.get("column");
  }
  const at = view.state.doc.line(Math.max(1, Math.min(Number(line) || 1, view.state.doc.lines)));
  const offset = Math.max(1, Number(column) || 1) - 1;
  view.dispatch({ selection: { anchor: Math.min(at.from + offset, at.to) }, effects: EditorView.scrollIntoView(at.from, { y: "center" }) });
  view.focus();
}

/** JSON must parse (an empty field is allowed: it means "none"). */
function jsonLinter() {
  const parse = jsonParseLinter();
  return (view) => (view.state.doc.toString().trim() ? parse(view) : []);
}

function enhance(root) {
  (root || document).querySelectorAll("textarea[data-code]").forEach(codeField);
}

// ------------------------------------------------------------------ start

window.statecraft = window.statecraft || {};
window.statecraft.merge3 = merge3;
window.statecraft.enhance = enhance;
window.statecraft.goToLine = goToLine;

function start() {
  const compiled = document.getElementById("compiled");
  if (compiled) new CompiledView(compiled);
  const textarea = document.getElementById("instructions");
  if (textarea) new InstructionsEditor(textarea);
  else if (compiled) window.statecraft.compiled.show(readJson("preview-data", { text: "", spans: [], names: [] }));
  enhance(document);
  const enhanceSwapped = (e) => enhance(e.detail.elt && e.detail.elt.isConnected ? e.detail.elt : document);
  document.body.addEventListener("htmx:afterSwap", enhanceSwapped);
  document.body.addEventListener("htmx:afterSettle", enhanceSwapped);
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
else start();
