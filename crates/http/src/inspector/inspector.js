// The plugin inspector. Plain JavaScript, no dependencies, served by `webcodex-plugin serve`.
//
// Rules this file keeps:
// - Everything a plugin or the server supplies is untrusted text: it is rendered only with
//   createElement / textContent / setAttribute, never parsed as HTML.
// - The token lives in this tab's sessionStorage and in memory; it is sent only as an
//   `Authorization: Bearer` header to this origin, never in a URL, never logged.
// - The only endpoints are POST /api/tools/call and GET /api/whoami (the token's scopes).
'use strict';

(function () {
  const TOKEN_KEY = 'webcodex-inspector-token';
  const SCOPE_INSPECT = 'plugin:inspect';
  const SCOPE_INVOKE = 'plugin:invoke';
  const SCOPE_MANAGE = 'plugin:manage';
  // Each describe mints a binding in a bounded store shared with every client (oldest
  // evicted), so the page describes at most this many tools on its own per load; the rest are
  // described when asked for.
  const EAGER_DESCRIBE_BUDGET = 64;

  const state = { token: null, scopes: new Set(), generation: 0, describeBudget: 0 };

  // ------------------------------------------------------------------------------------------
  // Plain-language help: per error code, per recovery value, per admission diagnostic.
  // ------------------------------------------------------------------------------------------

  const CODE_HELP = {
    plugin_provider_busy: 'Another request is running on this plugin (requests are never queued). Try again when it finishes.',
    plugin_tool_unavailable: 'This tool is not in the plugin\u2019s current catalog. Refresh to see the tools it has now.',
    plugin_schema_changed: 'The tool\u2019s schema changed since it was described. Describe it again, then call with the new binding.',
    plugin_arguments_schema_invalid: 'The arguments do not match the tool\u2019s input schema, or are too large. Correct them.',
    plugin_timeout: 'The plugin did not answer within its time budget.',
    plugin_request_too_large: 'The request is larger than one protocol line (1 MiB). Send smaller arguments.',
    plugin_unexpected_message: 'The plugin wrote to stdout without being asked. Its stdout must carry only protocol lines (logs go to stderr). Fix it, then reload.',
    plugin_stdin_failed: 'Writing to the plugin failed; it has probably exited. Reload the runner.',
    plugin_eof: 'The plugin closed its output or exited (a crash?). Fix it, then reload.',
    plugin_malformed_json: 'The plugin wrote a line that is not one JSON value (an empty line, a byte-order mark, or log text on stdout). Fix it, then reload.',
    plugin_message_too_large: 'The plugin wrote a line longer than 1 MiB. Make its answers smaller, then reload.',
    plugin_stdout_failed: 'Reading the plugin\u2019s output failed. Reload the runner.',
    plugin_protocol_error: 'The plugin\u2019s answer broke JSON-RPC 2.0 (envelope or error shape). Fix the plugin, then reload.',
    plugin_response_id_invalid: 'The plugin answered with an id that is not a non-negative integer. Fix the plugin, then reload.',
    plugin_duplicate_response_id: 'The plugin answered an id twice. Fix the plugin, then reload.',
    plugin_unknown_response_id: 'The plugin answered an id that was never sent. Fix the plugin, then reload.',
    plugin_manager_stopping: 'The runner is shutting down. Wait until it is back.',
    plugin_rpc_error: 'The plugin answered with an error of its own; its message says why.',
    plugin_result_invalid: 'The plugin\u2019s result broke the result contract (text content items; only content, structuredContent and isError). Fix the plugin.',
    plugin_output_schema_violation: 'structuredContent is missing or does not match the tool\u2019s output schema. Fix the plugin.',
    stale_plugin_provider: 'That plugin instance is no longer current. Refresh, then describe the tool again.',
    plugin_provider_unavailable: 'The plugin was stopped after a fault. Reload the runner (needs plugin:manage) to start it again.',
    plugin_config_read_failed: 'The runner\u2019s runner.toml could not be read. Check that it exists and is readable.',
    plugin_config_parse_failed: 'runner.toml is not valid TOML. Fix the syntax error, then reload.',
    plugin_config_invalid: 'runner.toml breaks the configuration rules (an unknown key, a bad id, a relative cwd, an unknown profile, a timeout out of range). Fix it, then reload.',
    plugin_not_configured: 'No plugin with this id is configured. Refresh to see what exists.',
    plugin_environment_prepare_failed: 'The plugin\u2019s environment (profile or init_script) could not be prepared. Check the profile and its script.',
    plugin_executable_unavailable: 'The plugin\u2019s command was not found or is not executable. Check `command` (and `cwd` for a relative path), build the plugin, then reload.',
    plugin_executable_unsupported: 'The command cannot be started directly (for example a .cmd or .bat file). Point `command` at a real executable.',
    plugin_spawn_failed: 'The plugin process could not be started. Check the command and the machine\u2019s process limits.',
    plugin_protocol_version_mismatch: 'The plugin speaks another protocol version; initialize must answer protocolVersion "webcodex-plugin-v1".',
    plugin_initialize_invalid: 'The plugin\u2019s answer to initialize is not a valid result. Fix its handshake, then reload.',
    plugin_tools_list_invalid: 'The plugin\u2019s tool list was rejected at admission; the diagnostic names the tool and field. Fix it, then reload.',
    plugin_check_busy: 'Another check or reload is running. Try again when it finishes.',
    plugin_reload_busy: 'Another check or reload is running. Try again when it finishes.',
    invalid_arguments: 'The request\u2019s parameters are not valid for this action.',
    insufficient_scope: 'This token lacks the scope this action needs. Ask for a token that has it.',
    describe_required: 'The binding is unknown or expired. Describe the tool again, then call.',
    plugin_replaced: 'The plugin or its runner restarted since the tool was described. Refresh and describe again.',
    plugin_runner_not_found: 'No runner with this id. Refresh to see the runners.',
    plugin_runner_unavailable: 'The remote runner could not be reached; nothing was sent. Try again later.',
    plugin_gateway_timeout: 'The remote runner did not answer in time; the request may have reached it.',
    gateway_saturated: 'The gateway is handling as many requests as it allows. Try again shortly.',
    plugin_runner_saturated: 'The remote runner is handling as many requests as the front allows it; nothing was sent. Try again shortly.',
    plugin_project_changed: 'The project root changed since the tool was described (moved, replaced, re-created); nothing was sent. Refresh and describe the tool again.',
    plugin_project_unavailable: 'The project root does not exist or cannot be read on the runner (or the runner cannot bind tools to projects); nothing was sent.',
    plugin_project_mismatch: 'The plugin does not work in this project root (its cwd is another, or the root was replaced after it started: reload the runner).',
    invalid_request: 'The request was not well formed.',
    gateway_internal_error: 'The gateway failed while handling this request (a bug in the gateway).',
    unauthorized: 'The token was not accepted. Paste a valid token.',
    transport_failed: 'The server could not be reached, or its answer was lost.',
  };

  const RECOVERY_HELP = {
    retry: 'Nothing was started: the same request may be sent again later.',
    describe_again: 'Describe the tool again, then call with the new binding.',
    list_and_describe: 'Refresh the list, then describe the tool again.',
    reload: 'Reload the runner (needs plugin:manage), then try again.',
    fix_arguments: 'Correct the arguments, then try again.',
    fix_request: 'Send a well-formed request.',
    list: 'Refresh the list to see what exists.',
    do_not_retry: 'Do not repeat it blindly: the effect may already have happened. Check its effect first.',
  };

  const DISPATCH_HELP = {
    not_started: 'Not started: nothing reached the plugin.',
    completed: 'Completed: the plugin answered, but the answer was an error.',
    outcome_unknown: 'Outcome unknown: the request may have reached the plugin, so its effect may have happened.',
  };

  const DIAGNOSTIC_HELP = {
    tools_list_result_malformed: 'The tools/list result must be exactly {"tools": [...]}.',
    tool_count_exceeded: 'The plugin declares more tools than allowed.',
    tool_definition_invalid: 'A tool definition is malformed or has an unknown key (allowed: name, title, description, inputSchema, outputSchema, annotations).',
    invalid_tool_name: 'A tool name breaks the naming rule.',
    duplicate_tool_name: 'Two tools have the same name.',
    invalid_tool_title: 'A tool title is not a valid string within bounds.',
    invalid_tool_description: 'A tool description is not a valid string within bounds.',
    input_schema_invalid: 'An inputSchema is not a valid Schema Profile v1 schema (the root must be an object schema).',
    output_schema_invalid: 'An outputSchema is not a valid Schema Profile v1 schema.',
    schema_keyword_unsupported: 'A schema uses a keyword outside Schema Profile v1 ($ref, pattern, format, minimum, anyOf, default\u2026 are rejected, not ignored).',
    annotations_invalid: 'The annotations are not an object within bounds, or a hint is not a boolean.',
    schema_bounds_exceeded: 'A schema is too deep or too large.',
  };

  const PHASE_HELP = {
    config: 'reading runner.toml',
    environment: 'preparing the environment',
    executable: 'finding the executable',
    spawn: 'starting the process',
    stdio: 'connecting its stdin/stdout',
    initialize: 'the initialize handshake',
    tools_list: 'the tools/list request',
    validation: 'validating the tool list',
    ready: 'admitted',
  };

  // ------------------------------------------------------------------------------------------
  // DOM helpers (text only).
  // ------------------------------------------------------------------------------------------

  let nextId = 0;
  function uid(prefix) {
    nextId += 1;
    return prefix + '-' + nextId;
  }

  // el('div', {class: 'x', attrs: {...}}, child, 'text', ...): children are nodes or text.
  function el(tag, props) {
    const node = document.createElement(tag);
    const options = props || {};
    if (options.class) node.className = options.class;
    if (options.text !== undefined) node.textContent = String(options.text);
    if (options.attrs) {
      for (const name of Object.keys(options.attrs)) {
        const value = options.attrs[name];
        if (value !== undefined && value !== null && value !== false) {
          node.setAttribute(name, value === true ? '' : String(value));
        }
      }
    }
    for (let i = 2; i < arguments.length; i += 1) append(node, arguments[i]);
    return node;
  }

  function append(parent, child) {
    if (child === undefined || child === null || child === false) return;
    if (Array.isArray(child)) {
      for (const c of child) append(parent, c);
    } else if (typeof child === 'string' || typeof child === 'number') {
      parent.appendChild(document.createTextNode(String(child)));
    } else {
      parent.appendChild(child);
    }
  }

  function button(label, cls, onClick, attrs) {
    const b = el('button', { class: cls, text: label, attrs: Object.assign({ type: 'button' }, attrs || {}) });
    b.addEventListener('click', onClick);
    return b;
  }

  function badge(words, kind, title) {
    return el('span', { class: 'badge ' + kind, text: words, attrs: { title: title } });
  }

  function pretty(value) {
    try {
      return JSON.stringify(value, null, 2);
    } catch (e) {
      return String(value);
    }
  }

  function isObject(v) {
    return v !== null && typeof v === 'object' && !Array.isArray(v);
  }

  function str(v) {
    return typeof v === 'string' ? v : '';
  }

  // ------------------------------------------------------------------------------------------
  // Server access.
  // ------------------------------------------------------------------------------------------

  function authHeaders() {
    return { Authorization: 'Bearer ' + state.token };
  }

  // One plugin_tool request. Resolves to {success, output, status}; a lost request becomes a
  // failure object of its own (`transport_failed`) whose dispatch depends on the action.
  async function tool(params) {
    const mayHaveRun = params.action === 'call' || params.action === 'check' || params.action === 'reload';
    const lost = (why) => ({
      success: false,
      status: 0,
      output: {
        error: { code: 'transport_failed', message: why },
        dispatch: mayHaveRun ? 'outcome_unknown' : 'not_started',
        recovery: mayHaveRun ? 'do_not_retry' : undefined,
      },
    });
    let response;
    try {
      response = await fetch('/api/tools/call', {
        method: 'POST',
        headers: Object.assign({ 'Content-Type': 'application/json', Accept: 'application/json' }, authHeaders()),
        body: JSON.stringify({ tool: 'plugin_tool', params: params }),
        cache: 'no-store',
        credentials: 'omit',
        redirect: 'error',
        referrerPolicy: 'no-referrer',
      });
    } catch (e) {
      return lost('the request failed before an answer came (the server may be down, or the connection was lost)');
    }
    let body;
    try {
      body = await response.json();
    } catch (e) {
      return lost('the server answered ' + response.status + ' without a JSON body');
    }
    if (response.status === 401) {
      signOut('The token is no longer accepted (401). Paste a valid token.');
    }
    return { success: body && body.success === true, output: isObject(body && body.output) ? body.output : {}, status: response.status };
  }

  async function whoami(token) {
    const response = await fetch('/api/whoami', {
      method: 'GET',
      headers: { Authorization: 'Bearer ' + token, Accept: 'application/json' },
      cache: 'no-store',
      credentials: 'omit',
      redirect: 'error',
      referrerPolicy: 'no-referrer',
    });
    if (response.status === 401) return null;
    if (!response.ok) throw new Error('the server answered ' + response.status);
    const body = await response.json();
    return Array.isArray(body.scopes) ? body.scopes.filter((s) => typeof s === 'string') : [];
  }

  function can(scope) {
    return state.scopes.has(scope);
  }

  // ------------------------------------------------------------------------------------------
  // Failures and suggestions.
  // ------------------------------------------------------------------------------------------

  function suggestionFor(code) {
    return CODE_HELP[code] || 'No suggestion is known for this code.';
  }

  // A failure object {error:{code,message},dispatch,recovery?} as a panel.
  function failureView(output, what) {
    const error = isObject(output.error) ? output.error : {};
    const code = str(error.code) || 'unknown';
    const dispatch = str(output.dispatch);
    const recovery = str(output.recovery);
    const panel = el('div', { class: 'panel failure', attrs: { role: 'alert', 'data-code': code, 'data-dispatch': dispatch } });
    panel.appendChild(el('p', {}, el('strong', { text: (what || 'The request') + ' failed: ' }), el('code', { class: 'error-code', text: code })));
    if (str(error.message)) panel.appendChild(el('p', { class: 'error-message', text: error.message }));
    if (dispatch === 'outcome_unknown') {
      panel.appendChild(el('p', {
        class: 'outcome-unknown',
        text: 'The outcome is unknown: the effect may have happened. It was not retried, and it is not offered again here; check its effect before doing anything else.',
      }));
    } else if (DISPATCH_HELP[dispatch]) {
      panel.appendChild(el('p', { class: 'dispatch', text: DISPATCH_HELP[dispatch] }));
    }
    panel.appendChild(el('p', { class: 'suggestion', text: 'Suggestion: ' + suggestionFor(code) }));
    if (recovery) {
      panel.appendChild(el('p', { class: 'recovery' }, 'What to do (', el('code', { text: recovery }), '): ', RECOVERY_HELP[recovery] || 'No help is known for this recovery.'));
    }
    return panel;
  }

  // ------------------------------------------------------------------------------------------
  // Annotation hints.
  // ------------------------------------------------------------------------------------------

  function hintsOf(definition) {
    const a = isObject(definition && definition.annotations) ? definition.annotations : {};
    const pick = (k) => (typeof a[k] === 'boolean' ? a[k] : undefined);
    return {
      readOnly: pick('readOnlyHint'),
      destructive: pick('destructiveHint'),
      idempotent: pick('idempotentHint'),
      openWorld: pick('openWorldHint'),
    };
  }

  // As MCP reads the hints: a tool that is not read-only and does not say it is
  // non-destructive may be destructive.
  function mayBeDestructive(hints) {
    return hints.destructive === true || (hints.readOnly !== true && hints.destructive !== false);
  }

  function hintBadges(definition) {
    const h = hintsOf(definition);
    const out = [];
    if (h.readOnly === true) out.push(badge('read-only', 'ok', 'readOnlyHint: true'));
    if (h.readOnly === false) out.push(badge('modifies state', 'warn', 'readOnlyHint: false'));
    if (h.destructive === true && h.readOnly !== true) out.push(badge('\u26a0 destructive', 'destructive', 'destructiveHint: true'));
    else if (h.destructive === undefined && h.readOnly !== true) out.push(badge('may be destructive (no hint)', 'maybe-destructive', 'no destructiveHint and not read-only'));
    if (h.destructive === false) out.push(badge('non-destructive', 'ok', 'destructiveHint: false'));
    if (h.idempotent === true) out.push(badge('idempotent', 'info', 'idempotentHint: true'));
    if (h.idempotent === false) out.push(badge('not idempotent', 'neutral', 'idempotentHint: false'));
    if (h.openWorld === true) out.push(badge('open world', 'info', 'openWorldHint: true'));
    if (h.openWorld === false) out.push(badge('closed world', 'neutral', 'openWorldHint: false'));
    return out;
  }

  // ------------------------------------------------------------------------------------------
  // Session: token form, scopes, sign out.
  // ------------------------------------------------------------------------------------------

  const main = () => document.getElementById('inspector');

  function showTokenError(message) {
    document.getElementById('token-error').textContent = message;
    document.getElementById('token-input').setAttribute('aria-invalid', message ? 'true' : 'false');
  }

  function signOut(message) {
    state.generation += 1;
    state.token = null;
    state.scopes = new Set();
    try {
      sessionStorage.removeItem(TOKEN_KEY);
    } catch (e) { /* storage unavailable: memory only */ }
    document.getElementById('token-form').hidden = false;
    document.getElementById('session').hidden = true;
    document.getElementById('scope-list').replaceChildren();
    main().replaceChildren();
    showTokenError(message || '');
    if (message) document.getElementById('token-input').focus();
  }

  async function connect(token) {
    showTokenError('');
    let scopes;
    try {
      scopes = await whoami(token);
    } catch (e) {
      showTokenError('The server could not be asked about this token: ' + e.message);
      return;
    }
    if (scopes === null) {
      signOut('This token was not accepted (401). Check it and paste it again.');
      return;
    }
    state.token = token;
    state.scopes = new Set(scopes);
    try {
      sessionStorage.setItem(TOKEN_KEY, token);
    } catch (e) { /* memory only */ }
    document.getElementById('token-input').value = '';
    document.getElementById('token-form').hidden = true;
    document.getElementById('session').hidden = false;
    const list = document.getElementById('scope-list');
    list.replaceChildren();
    if (scopes.length === 0) list.appendChild(badge('no scopes', 'bad'));
    for (const s of scopes) {
      list.appendChild(badge(s, 'info'));
      list.appendChild(document.createTextNode(' '));
    }
    await loadAll();
  }

  // ------------------------------------------------------------------------------------------
  // Runners, providers, tools.
  // ------------------------------------------------------------------------------------------

  async function loadAll() {
    const generation = ++state.generation;
    state.describeBudget = EAGER_DESCRIBE_BUDGET;
    const root = main();
    root.setAttribute('aria-busy', 'true');
    root.removeAttribute('data-loaded');
    root.replaceChildren(el('p', { class: 'muted', text: 'Loading\u2026' }));
    if (!can(SCOPE_INSPECT)) {
      root.replaceChildren(el('div', { class: 'panel warning', attrs: { id: 'no-inspect' } },
        el('p', { text: 'This token lacks plugin:inspect, so runners and plugins cannot be listed.' })));
      root.setAttribute('aria-busy', 'false');
      root.setAttribute('data-loaded', 'true');
      return;
    }
    const listed = await tool({ action: 'list' });
    if (generation !== state.generation) return;
    root.replaceChildren();
    if (!listed.success) {
      root.appendChild(failureView(listed.output, 'Listing the runners'));
    } else {
      const runners = Array.isArray(listed.output.runners) ? listed.output.runners : [];
      if (runners.length === 0) root.appendChild(el('p', { text: 'No runner is registered.' }));
      const loads = [];
      for (const r of runners) {
        if (!isObject(r) || typeof r.runner !== 'string') continue;
        const section = runnerSection(r);
        root.appendChild(section.node);
        loads.push(loadRunner(r.runner, section, generation));
      }
      await Promise.all(loads);
    }
    if (generation !== state.generation) return;
    root.setAttribute('aria-busy', 'false');
    root.setAttribute('data-loaded', 'true');
  }

  function runnerSection(r) {
    const id = r.runner;
    const headingId = uid('runner');
    const node = el('section', { class: 'runner', attrs: { 'aria-labelledby': headingId, 'data-runner': id } });
    const head = el('div', { class: 'runner-head' },
      el('h2', { attrs: { id: headingId } }, 'Runner ', el('code', { text: id })),
      typeof r.name === 'string' ? el('span', { class: 'muted', text: r.name }) : null);
    node.appendChild(head);
    const actions = el('div', { class: 'runner-tools' });
    const results = el('div', { class: 'runner-results' });
    const providers = el('div', { class: 'providers' });
    const section = { id: id, node: node, providers: providers, results: results };
    if (can(SCOPE_MANAGE)) actions.appendChild(reloadControl(section));
    actions.appendChild(catalogForm(section));
    node.appendChild(actions);
    node.appendChild(results);
    node.appendChild(providers);
    return section;
  }

  async function loadRunner(runnerId, section, generation, listedPlugins) {
    let plugins = listedPlugins;
    section.providers.replaceChildren(el('p', { class: 'muted', text: 'Loading providers\u2026' }));
    if (!plugins) {
      const listed = await tool({ action: 'list', runner: runnerId });
      if (generation !== state.generation) return;
      if (!listed.success) {
        section.providers.replaceChildren(failureView(listed.output, 'Listing runner ' + runnerId));
        return;
      }
      plugins = Array.isArray(listed.output.plugins) ? listed.output.plugins : [];
    }
    section.providers.replaceChildren(el('h3', { class: 'providers-heading', text: plugins.length + (plugins.length === 1 ? ' provider' : ' providers') }));
    const loads = [];
    for (const p of plugins) {
      if (!isObject(p) || typeof p.plugin !== 'string') continue;
      const card = providerCard(runnerId, p);
      section.providers.appendChild(card.node);
      loads.push(loadProvider(runnerId, p, card, generation));
    }
    await Promise.all(loads);
  }

  function statusBadge(p) {
    if (p.status === 'ready') return badge('ready', 'ok', 'status: ready');
    return badge('failed', 'bad', 'status: ' + str(p.status));
  }

  function providerCard(runnerId, p) {
    const failed = p.status !== 'ready';
    const headingId = uid('provider');
    const node = el('article', { class: 'provider ' + (failed ? 'failed' : 'ready'), attrs: { 'aria-labelledby': headingId, 'data-plugin': p.plugin } });
    node.appendChild(el('div', { class: 'provider-head' },
      el('h3', { attrs: { id: headingId }, class: 'provider-name', text: str(p.name) || p.plugin }),
      el('code', { class: 'provider-id', text: p.plugin }),
      statusBadge(p),
      el('span', { class: 'tool-count muted' })));
    if (failed && typeof p.errorCode === 'string') {
      node.appendChild(el('div', { class: 'panel failure provider-error', attrs: { 'data-code': p.errorCode } },
        el('p', {}, 'Error code: ', el('code', { class: 'error-code', text: p.errorCode })),
        el('p', { class: 'suggestion', text: 'Suggestion: ' + suggestionFor(p.errorCode) })));
    }
    const checkArea = el('div', { class: 'check-result' });
    if (can(SCOPE_MANAGE)) {
      node.appendChild(el('div', { class: 'tool-actions' },
        button('Check plugin', 'check-button', () => runCheck(runnerId, p.plugin, checkArea), { 'aria-label': 'Check plugin ' + p.plugin })));
    }
    node.appendChild(checkArea);
    const tools = el('ul', { class: 'tools', attrs: { 'aria-label': 'Tools of ' + p.plugin } });
    node.appendChild(tools);
    return { node: node, tools: tools, count: node.querySelector('.tool-count') };
  }

  async function loadProvider(runnerId, p, card, generation) {
    if (p.status !== 'ready') {
      card.count.textContent = 'no tools (not ready)';
      return;
    }
    const detail = await tool({ action: 'list', runner: runnerId, plugin: p.plugin });
    if (generation !== state.generation) return;
    if (!detail.success) {
      card.tools.replaceWith(failureView(detail.output, 'Listing plugin ' + p.plugin));
      return;
    }
    const tools = Array.isArray(detail.output.tools) ? detail.output.tools : [];
    const count = typeof detail.output.toolCount === 'number' ? detail.output.toolCount : tools.length;
    card.count.textContent = count + (count === 1 ? ' tool' : ' tools');
    const rows = [];
    for (const t of tools) {
      if (!isObject(t) || typeof t.name !== 'string') continue;
      const row = toolRow(runnerId, p.plugin, t);
      card.tools.appendChild(row.node);
      rows.push(row);
    }
    for (const row of rows) {
      if (generation !== state.generation) return;
      if (state.describeBudget <= 0) {
        row.showLoadButton();
        continue;
      }
      state.describeBudget -= 1;
      await row.describe();
    }
  }

  // One tool: summary from list, then its definition from describe.
  function toolRow(runnerId, pluginId, summary) {
    const node = el('li', { class: 'tool', attrs: { 'data-tool': summary.name } });
    const badges = el('span', { class: 'badges' });
    node.appendChild(el('div', { class: 'tool-head' },
      el('code', { class: 'tool-name', text: summary.name }),
      typeof summary.title === 'string' ? el('span', { class: 'tool-title', text: summary.title }) : null,
      badges));
    // list gives names and titles only; describe fills the description.
    const description = el('p', { class: 'tool-description', text: str(summary.description) });
    node.appendChild(description);
    const actions = el('div', { class: 'tool-actions' });
    node.appendChild(actions);
    const problems = el('div', { class: 'tool-problems' });
    node.appendChild(problems);
    const schemaView = el('div', { class: 'schema-view', attrs: { hidden: true } });
    const tryView = el('div', { class: 'try-view', attrs: { hidden: true } });
    node.appendChild(schemaView);
    node.appendChild(tryView);
    const row = { node: node, definition: null };

    row.describe = async function () {
      const described = await tool({ action: 'describe', runner: runnerId, plugin: pluginId, tool: summary.name });
      problems.replaceChildren();
      if (!described.success) {
        problems.appendChild(failureView(described.output, 'Describing ' + summary.name));
        return null;
      }
      const definition = isObject(described.output.tool) ? described.output.tool : {};
      row.definition = definition;
      description.textContent = str(definition.description);
      badges.replaceChildren();
      for (const b of hintBadges(definition)) {
        badges.appendChild(b);
        badges.appendChild(document.createTextNode(' '));
      }
      renderActions();
      return described.output;
    };

    row.showLoadButton = function () {
      actions.replaceChildren(button('Load details', 'load-details', () => row.describe(), { 'aria-label': 'Load details of ' + summary.name }));
    };

    function renderActions() {
      if (actions.querySelector('.schema-button')) return;
      actions.replaceChildren();
      const schemaButton = button('Show schemas', 'schema-button', () => toggleSchemas(schemaButton), {
        'aria-expanded': 'false',
        'aria-label': 'Show schemas of ' + summary.name,
      });
      actions.appendChild(schemaButton);
      if (can(SCOPE_INVOKE)) {
        const tryButton = button('Try it', 'try-button', () => toggleTry(tryButton), {
          'aria-expanded': 'false',
          'aria-label': 'Try ' + summary.name,
        });
        actions.appendChild(tryButton);
      }
    }

    async function toggleSchemas(toggle) {
      if (!schemaView.hidden) {
        schemaView.hidden = true;
        toggle.setAttribute('aria-expanded', 'false');
        toggle.textContent = 'Show schemas';
        return;
      }
      // On demand: describe again so the schemas shown are the current ones.
      const output = await row.describe();
      if (!output) return;
      const def = row.definition;
      schemaView.replaceChildren(
        el('h5', { text: 'Input schema' }),
        el('pre', { class: 'input-schema', text: pretty(def.inputSchema) }),
        el('h5', { text: 'Output schema' }),
        def.outputSchema === undefined
          ? el('p', { class: 'output-schema muted', text: 'None declared (the result need not carry structuredContent).' })
          : el('pre', { class: 'output-schema', text: pretty(def.outputSchema) }),
        isObject(def.annotations) ? el('h5', { text: 'Annotations' }) : null,
        isObject(def.annotations) ? el('pre', { class: 'annotations', text: pretty(def.annotations) }) : null);
      schemaView.hidden = false;
      toggle.setAttribute('aria-expanded', 'true');
      toggle.textContent = 'Hide schemas';
    }

    function toggleTry(toggle) {
      if (!tryView.hidden) {
        tryView.hidden = true;
        toggle.setAttribute('aria-expanded', 'false');
        return;
      }
      tryView.replaceChildren(tryForm(runnerId, pluginId, summary.name, row));
      tryView.hidden = false;
      toggle.setAttribute('aria-expanded', 'true');
      const first = tryView.querySelector('input, select, textarea, button');
      if (first) first.focus();
    }

    return row;
  }

  // ------------------------------------------------------------------------------------------
  // check, reload, catalog.
  // ------------------------------------------------------------------------------------------

  async function runCheck(runnerId, pluginId, area) {
    area.replaceChildren(el('p', { class: 'muted', text: 'Checking\u2026' }));
    const result = await tool({ action: 'check', runner: runnerId, plugin: pluginId });
    if (!result.success) {
      area.replaceChildren(failureView(result.output, 'Check'));
      return;
    }
    const r = result.output;
    if (r.ready === true) {
      area.replaceChildren(el('div', { class: 'panel success check-report', attrs: { 'data-ready': 'true', role: 'status' } },
        el('p', {}, el('strong', { text: 'Check: ready. ' }), counted(typeof r.toolCount === 'number' ? r.toolCount : 0, 'tool') + ' admitted.'),
        typeof r.catalogDigest === 'string' ? el('p', {}, 'Catalog digest: ', el('code', { class: 'catalog-digest', text: r.catalogDigest })) : null));
      return;
    }
    const code = str(r.code);
    const phase = str(r.phase);
    const facts = el('dl', { class: 'facts' },
      el('dt', { text: 'Phase' }), el('dd', {}, el('code', { text: phase }), PHASE_HELP[phase] ? ' (' + PHASE_HELP[phase] + ')' : ''),
      el('dt', { text: 'Code' }), el('dd', {}, el('code', { class: 'error-code', text: code })),
      el('dt', { text: 'Detail' }), el('dd', { class: 'check-detail', text: str(r.detail) }));
    const panel = el('div', { class: 'panel failure check-report', attrs: { 'data-ready': 'false', 'data-code': code, role: 'alert' } },
      el('p', {}, el('strong', { text: 'Check: not ready.' })),
      facts,
      el('p', { class: 'suggestion', text: 'Suggestion: ' + suggestionFor(code) }));
    if (isObject(r.diagnostic)) {
      const d = r.diagnostic;
      const dcode = str(d.code);
      panel.appendChild(el('dl', { class: 'facts diagnostic' },
        el('dt', { text: 'Diagnostic' }), el('dd', {}, el('code', { text: dcode })),
        typeof d.tool === 'string' ? el('dt', { text: 'Tool' }) : null,
        typeof d.tool === 'string' ? el('dd', {}, el('code', { text: d.tool })) : null,
        typeof d.field === 'string' ? el('dt', { text: 'Field' }) : null,
        typeof d.field === 'string' ? el('dd', {}, el('code', { text: d.field })) : null));
      if (DIAGNOSTIC_HELP[dcode]) panel.appendChild(el('p', { class: 'diagnostic-help', text: 'About the diagnostic: ' + DIAGNOSTIC_HELP[dcode] }));
    }
    area.replaceChildren(panel);
  }

  function reloadControl(section) {
    const holder = el('div', { class: 'reload-control' });
    const start = button('Reload runner\u2026', 'reload-button', () => {
      start.hidden = true;
      const confirmId = uid('confirm');
      const box = el('div', { class: 'panel confirm reload-confirm', attrs: { role: 'alertdialog', 'aria-labelledby': confirmId } },
        el('p', { attrs: { id: confirmId } }, 'Reload runner ', el('code', { text: section.id }), '? Every plugin is started again from runner.toml; descriptions made before the reload stop working (describe again).'));
      const yes = button('Reload now', 'danger reload-confirm-button', async () => {
        box.remove();
        start.hidden = false;
        await runReload(section);
      });
      const no = button('Cancel', 'reload-cancel-button', () => {
        box.remove();
        start.hidden = false;
        start.focus();
      });
      box.appendChild(el('p', {}, yes, ' ', no));
      holder.appendChild(box);
      no.focus();
    }, { 'aria-label': 'Reload runner ' + section.id });
    holder.appendChild(start);
    return holder;
  }

  async function runReload(section) {
    section.results.replaceChildren(el('p', { class: 'muted', text: 'Reloading\u2026' }));
    const result = await tool({ action: 'reload', runner: section.id });
    if (!result.success) {
      section.results.replaceChildren(failureView(result.output, 'Reload'));
      return;
    }
    const failures = Array.isArray(result.output.failures) ? result.output.failures : [];
    const plugins = Array.isArray(result.output.plugins) ? result.output.plugins : [];
    // A reload swaps every provider or none: with any failure the previous set stays.
    const committed = failures.length === 0;
    const panel = el('div', { class: 'panel reload-report ' + (committed ? 'success' : 'failure'), attrs: { role: 'status', 'data-failures': failures.length, 'data-committed': committed ? 'true' : 'false' } },
      committed
        ? el('p', {}, el('strong', { text: 'Reloaded. ' }), 'Every provider was started again: ' + plugins.length + (plugins.length === 1 ? ' provider.' : ' providers.'))
        : el('p', {}, el('strong', { text: 'Not reloaded. ' }), failures.length + (failures.length === 1 ? ' candidate failed' : ' candidates failed') +
          ', so the runner keeps its previous providers (a reload replaces all of them or none). Fix the failures, then reload again.'));
    if (failures.length) {
      const list = el('ul', { class: 'reload-failures' });
      for (const f of failures) {
        if (!isObject(f)) continue;
        const code = str(f.code);
        list.appendChild(el('li', { attrs: { 'data-plugin': str(f.plugin), 'data-code': code } },
          el('code', { text: str(f.plugin) }), ': ', el('code', { class: 'error-code', text: code }), ' \u2014 ', suggestionFor(code)));
      }
      panel.appendChild(list);
    }
    section.results.replaceChildren(panel);
    state.describeBudget = Math.max(state.describeBudget, EAGER_DESCRIBE_BUDGET / 2);
    await loadRunner(section.id, section, state.generation, plugins);
  }

  function catalogForm(section) {
    const inputId = uid('project');
    const errorId = uid('project-error');
    const input = el('input', { attrs: { id: inputId, type: 'text', name: 'project', autocomplete: 'off', spellcheck: 'false', placeholder: '/absolute/path/to/project', 'aria-describedby': errorId } });
    const error = el('p', { class: 'field-error', attrs: { id: errorId, role: 'alert' } });
    const out = el('div', { class: 'catalog-result' });
    const form = el('form', { class: 'catalog-form', attrs: { novalidate: true } },
      el('div', { class: 'field' },
        el('label', { attrs: { for: inputId }, text: 'Project catalog for an absolute path' }),
        input, ' ', el('button', { attrs: { type: 'submit' }, class: 'catalog-button', text: 'Show catalog' }),
        error));
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      const project = input.value.trim();
      const absolute = project.startsWith('/') || /^[A-Za-z]:[\\/]/.test(project) || project.startsWith('\\\\');
      if (!absolute) {
        error.textContent = 'Enter an absolute path (starting with /); nothing was sent.';
        input.setAttribute('aria-invalid', 'true');
        input.focus();
        return;
      }
      error.textContent = '';
      input.setAttribute('aria-invalid', 'false');
      out.replaceChildren(el('p', { class: 'muted', text: 'Loading the catalog\u2026' }));
      const result = await tool({ action: 'catalog', runner: section.id, project: project });
      if (!result.success) {
        out.replaceChildren(failureView(result.output, 'The catalog'));
        return;
      }
      out.replaceChildren(catalogView(result.output));
    });
    return el('div', { class: 'catalog' }, form, out);
  }

  function catalogView(c) {
    const tools = Array.isArray(c.tools) ? c.tools : [];
    // camelCase keys (newer servers), snake_case (older ones).
    const totalKey = typeof c.totalCount === 'number' ? c.totalCount : c.total_count;
    const total = typeof totalKey === 'number' ? totalKey : tools.length;
    const revision = typeof c.catalogRevision === 'string' ? c.catalogRevision : c.catalog_revision;
    const panel = el('div', { class: 'panel catalog-report' },
      el('p', {}, tools.length + ' of ' + counted(total, 'tool'), typeof revision === 'string' ? ' \u2014 revision ' : '',
        typeof revision === 'string' ? el('code', { class: 'catalog-revision', text: revision }) : null));
    if (tools.length === 0) {
      panel.appendChild(el('p', { text: 'No ready provider works in this project root (a provider\u2019s cwd must be this path).' }));
      return panel;
    }
    const body = el('tbody');
    for (const t of tools) {
      if (!isObject(t)) continue;
      body.appendChild(el('tr', { attrs: { 'data-tool': str(t.tool) } },
        el('td', {}, el('code', { text: str(t.plugin) })),
        el('td', {}, el('code', { text: str(t.tool) })),
        el('td', { text: str(t.title) }),
        el('td', { text: str(t.description) }),
        el('td', {}, hintBadges(t))));
    }
    panel.appendChild(el('table', {},
      el('thead', {}, el('tr', {}, ['Plugin', 'Tool', 'Title', 'Description', 'Hints'].map((h) => el('th', { attrs: { scope: 'col' }, text: h })))),
      body));
    return panel;
  }

  // ------------------------------------------------------------------------------------------
  // "Try it": a form generated from the inputSchema (Schema Profile v1), validated before
  // anything is sent, then describe → call.
  // ------------------------------------------------------------------------------------------

  const ABSENT = { absent: true };
  const INVALID = { invalid: true };

  function typeOf(schema) {
    return isObject(schema) && typeof schema.type === 'string' ? schema.type : 'object';
  }

  // "1 character", "0 characters", "12 characters": the noun agrees with the number.
  function counted(n, noun) {
    return n + ' ' + (n === 1 ? noun : noun + 's');
  }

  function describeType(schema) {
    const t = typeOf(schema);
    const parts = [t];
    if (t === 'string' && typeof schema.minLength === 'number') parts.push('at least ' + counted(schema.minLength, 'character'));
    if (t === 'string' && typeof schema.maxLength === 'number') parts.push('at most ' + counted(schema.maxLength, 'character'));
    if (t === 'array' && typeof schema.minItems === 'number') parts.push('at least ' + counted(schema.minItems, 'item'));
    if (t === 'array' && typeof schema.maxItems === 'number') parts.push('at most ' + counted(schema.maxItems, 'item'));
    return parts.join(', ');
  }

  function sameJson(a, b) {
    return JSON.stringify(a) === JSON.stringify(b);
  }

  // A field: label, control, description, error line. `make` builds the control given the ids.
  function fieldShell(labelText, required, schema) {
    const id = uid('arg');
    const errorId = id + '-error';
    const helpId = id + '-help';
    const wrap = el('div', { class: 'field' });
    const label = el('label', { attrs: { for: id } }, labelText, required ? ' (required)' : ' (optional)');
    const help = el('p', { class: 'help', attrs: { id: helpId } }, describeType(schema), str(schema.description) ? ' \u2014 ' + schema.description : '');
    const error = el('p', { class: 'field-error', attrs: { id: errorId } });
    return { id: id, wrap: wrap, label: label, help: help, error: error, describedBy: helpId + ' ' + errorId };
  }

  function setError(shell, control, message) {
    shell.error.textContent = message || '';
    if (control) control.setAttribute('aria-invalid', message ? 'true' : 'false');
  }

  function unicodeLength(s) {
    return Array.from(s).length;
  }

  // Checks const, enum and string / array lengths; returns an error message or ''.
  function checkValue(schema, value) {
    if (Object.prototype.hasOwnProperty.call(schema, 'const') && !sameJson(schema.const, value)) {
      return 'must be ' + JSON.stringify(schema.const);
    }
    if (Array.isArray(schema.enum) && !schema.enum.some((v) => sameJson(v, value))) {
      return 'must be one of the listed values';
    }
    if (typeof value === 'string') {
      const n = unicodeLength(value);
      if (typeof schema.minLength === 'number' && n < schema.minLength) return 'must be at least ' + counted(schema.minLength, 'character') + ' (has ' + n + ')';
      if (typeof schema.maxLength === 'number' && n > schema.maxLength) return 'must be at most ' + counted(schema.maxLength, 'character') + ' (has ' + n + ')';
    }
    if (Array.isArray(value)) {
      if (typeof schema.minItems === 'number' && value.length < schema.minItems) return 'needs at least ' + counted(schema.minItems, 'item');
      if (typeof schema.maxItems === 'number' && value.length > schema.maxItems) return 'allows at most ' + counted(schema.maxItems, 'item');
    }
    return '';
  }

  // An editor: {node, collect()} where collect() returns a value, ABSENT or INVALID and shows
  // its own errors inline.
  function makeEditor(schema, labelText, required) {
    const s = isObject(schema) ? schema : {};
    const t = typeOf(s);
    if (Array.isArray(s.enum) || Object.prototype.hasOwnProperty.call(s, 'const')) return choiceEditor(s, labelText, required);
    if (t === 'object') return objectEditor(s, labelText, required);
    if (t === 'array') return arrayEditor(s, labelText, required);
    if (t === 'boolean') return booleanEditor(s, labelText, required);
    if (t === 'null') return nullEditor(s, labelText, required);
    return textEditor(s, labelText, required, t);
  }

  function textEditor(s, labelText, required, t) {
    const shell = fieldShell(labelText, required, s);
    const long = t === 'string' && (typeof s.maxLength !== 'number' || s.maxLength > 200);
    const control = el(long ? 'textarea' : 'input', {
      class: 'arg-input',
      attrs: {
        id: shell.id,
        name: labelText,
        type: long ? undefined : 'text',
        inputmode: t === 'integer' ? 'numeric' : t === 'number' ? 'decimal' : undefined,
        'aria-describedby': shell.describedBy,
        'aria-required': required ? 'true' : 'false',
        'data-type': t,
        rows: long ? 2 : undefined,
        spellcheck: 'false',
      },
    });
    append(shell.wrap, [shell.label, control, shell.help, shell.error]);
    return {
      node: shell.wrap,
      collect: function () {
        const raw = control.value;
        let value;
        if (t === 'string') {
          if (raw === '' && !required) return clear();
          value = raw;
        } else {
          const text = raw.trim();
          if (text === '') {
            if (!required) return clear();
            return fail('is required: enter ' + (t === 'integer' ? 'an integer' : 'a number'));
          }
          if (t === 'integer') {
            if (!/^-?(0|[1-9][0-9]*)$/.test(text)) return fail('must be a whole number (like 42 or -7)');
            value = Number(text);
            if (!Number.isSafeInteger(value)) return fail('is too large for this page to send exactly (beyond \u00b12^53)');
          } else if (t === 'number') {
            if (!/^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$/.test(text)) return fail('must be a number (like 3.5 or -2)');
            value = Number(text);
            if (!Number.isFinite(value)) return fail('must be a finite number');
          } else {
            return fail('has a type this form cannot edit (' + t + ')');
          }
        }
        const problem = checkValue(s, value);
        if (problem) return fail(problem);
        setError(shell, control, '');
        return value;
      },
    };
    function clear() {
      setError(shell, control, '');
      return ABSENT;
    }
    function fail(message) {
      setError(shell, control, labelText + ' ' + message);
      return INVALID;
    }
  }

  function choiceEditor(s, labelText, required) {
    const shell = fieldShell(labelText, required, s);
    const values = Array.isArray(s.enum) ? s.enum : [s.const];
    const control = el('select', { class: 'arg-input', attrs: { id: shell.id, name: labelText, 'aria-describedby': shell.describedBy, 'aria-required': required ? 'true' : 'false' } });
    control.appendChild(el('option', { attrs: { value: '' }, text: required ? '\u2014 choose \u2014' : '\u2014 not set \u2014' }));
    values.forEach((v, i) => control.appendChild(el('option', { attrs: { value: String(i) }, text: typeof v === 'string' ? v : JSON.stringify(v) })));
    append(shell.wrap, [shell.label, control, shell.help, shell.error]);
    return {
      node: shell.wrap,
      collect: function () {
        if (control.value === '') {
          if (!required) {
            setError(shell, control, '');
            return ABSENT;
          }
          setError(shell, control, labelText + ' is required: choose a value');
          return INVALID;
        }
        setError(shell, control, '');
        return values[Number(control.value)];
      },
    };
  }

  function booleanEditor(s, labelText, required) {
    const shell = fieldShell(labelText, required, s);
    const control = el('select', { class: 'arg-input', attrs: { id: shell.id, name: labelText, 'aria-describedby': shell.describedBy, 'aria-required': required ? 'true' : 'false', 'data-type': 'boolean' } },
      el('option', { attrs: { value: '' }, text: required ? '\u2014 choose \u2014' : '\u2014 not set \u2014' }),
      el('option', { attrs: { value: 'true' }, text: 'true' }),
      el('option', { attrs: { value: 'false' }, text: 'false' }));
    append(shell.wrap, [shell.label, control, shell.help, shell.error]);
    return {
      node: shell.wrap,
      collect: function () {
        if (control.value === '') {
          if (!required) {
            setError(shell, control, '');
            return ABSENT;
          }
          setError(shell, control, labelText + ' is required: choose true or false');
          return INVALID;
        }
        setError(shell, control, '');
        return control.value === 'true';
      },
    };
  }

  function nullEditor(s, labelText, required) {
    const shell = fieldShell(labelText, required, s);
    const control = el('input', { attrs: { id: shell.id, type: 'checkbox', 'aria-describedby': shell.describedBy } });
    if (required) {
      control.checked = true;
      control.disabled = true;
    }
    append(shell.wrap, [el('span', { class: 'label' }, control, ' ', shell.label, ' \u2014 send null'), shell.help, shell.error]);
    return {
      node: shell.wrap,
      collect: () => (control.checked ? null : ABSENT),
    };
  }

  function objectEditor(s, labelText, required, isRoot) {
    const properties = isObject(s.properties) ? s.properties : {};
    const requiredNames = Array.isArray(s.required) ? s.required.filter((n) => typeof n === 'string') : [];
    // Required fields first, each group in the schema's order.
    const names = Object.keys(properties).sort((a, b) => Number(requiredNames.includes(b)) - Number(requiredNames.includes(a)));
    const container = isRoot ? el('div', { class: 'arg-object' }) : el('fieldset', { class: 'arg-object' }, el('legend', {}, labelText, required ? ' (required)' : ' (optional)'));
    if (!isRoot && str(s.description)) container.appendChild(el('p', { class: 'help', text: s.description }));
    const children = names.map((name) => ({ name: name, editor: makeEditor(properties[name], name, requiredNames.includes(name)) }));
    for (const c of children) container.appendChild(c.editor.node);
    // Required names without a declared schema, and extra properties when allowed: JSON text.
    const undeclared = requiredNames.filter((n) => !Object.prototype.hasOwnProperty.call(properties, n));
    let extra = null;
    if (s.additionalProperties !== false) {
      const shell = fieldShell('More properties (a JSON object)', undeclared.length > 0, { type: 'object', description: undeclared.length ? 'must include ' + undeclared.join(', ') : 'any properties not listed above' });
      const control = el('textarea', { class: 'arg-input arg-extra', attrs: { id: shell.id, 'aria-describedby': shell.describedBy, rows: 2, spellcheck: 'false', placeholder: '{}' } });
      append(shell.wrap, [shell.label, control, shell.help, shell.error]);
      container.appendChild(shell.wrap);
      extra = { shell: shell, control: control };
    } else if (names.length === 0) {
      container.appendChild(el('p', { class: 'muted', text: 'This takes no arguments.' }));
    }
    const objectError = el('p', { class: 'field-error' });
    container.appendChild(objectError);
    return {
      node: container,
      collect: function () {
        const value = {};
        let invalid = false;
        let present = false;
        for (const c of children) {
          const v = c.editor.collect();
          if (v === INVALID) invalid = true;
          else if (v !== ABSENT) {
            value[c.name] = v;
            present = true;
          }
        }
        if (extra) {
          const text = extra.control.value.trim();
          setError(extra.shell, extra.control, '');
          if (text !== '') {
            let parsed;
            try {
              parsed = JSON.parse(text);
            } catch (e) {
              parsed = INVALID;
            }
            if (!isObject(parsed)) {
              setError(extra.shell, extra.control, 'More properties must be one JSON object, like {"key": "value"}');
              invalid = true;
            } else {
              for (const k of Object.keys(parsed)) {
                if (Object.prototype.hasOwnProperty.call(value, k) || Object.prototype.hasOwnProperty.call(properties, k)) {
                  setError(extra.shell, extra.control, 'More properties repeats "' + k + '"; use its own field');
                  invalid = true;
                } else {
                  value[k] = parsed[k];
                  present = true;
                }
              }
            }
          }
        }
        objectError.textContent = '';
        if (!isRoot && !required && !present && !invalid) return ABSENT;
        if (invalid) return INVALID;
        const missing = undeclared.filter((n) => !Object.prototype.hasOwnProperty.call(value, n));
        if (missing.length) {
          objectError.textContent = (isRoot ? 'The arguments' : labelText) + ' must include ' + missing.join(', ');
          return INVALID;
        }
        const problem = checkValue(s, value);
        if (problem) {
          objectError.textContent = (isRoot ? 'The arguments' : labelText) + ' ' + problem;
          return INVALID;
        }
        return value;
      },
    };
  }

  function arrayEditor(s, labelText, required) {
    const itemSchema = isObject(s.items) ? s.items : null;
    const container = el('fieldset', { class: 'arg-array' }, el('legend', {}, labelText, required ? ' (required)' : ' (optional)', ' \u2014 ', describeType(s)));
    if (str(s.description)) container.appendChild(el('p', { class: 'help', text: s.description }));
    const list = el('ol', { class: 'arg-items' });
    const items = [];
    const arrayError = el('p', { class: 'field-error' });
    let jsonShell = null;
    if (!itemSchema) {
      // No item schema: any JSON values, entered as a JSON array.
      jsonShell = fieldShell(labelText + ' as a JSON array', required, { type: 'array' });
      const control = el('textarea', { class: 'arg-input', attrs: { id: jsonShell.id, 'aria-describedby': jsonShell.describedBy, rows: 2, spellcheck: 'false', placeholder: '[]' } });
      append(jsonShell.wrap, [jsonShell.label, control, jsonShell.help, jsonShell.error]);
      jsonShell.control = control;
      container.appendChild(jsonShell.wrap);
    } else {
      container.appendChild(list);
      const add = button('Add item', 'add-item', () => {
        const item = { editor: makeEditor(itemSchema, labelText + ' item ' + (items.length + 1), true) };
        const remove = button('Remove item', 'remove-item', () => {
          items.splice(items.indexOf(item), 1);
          item.node.remove();
          add.focus();
        }, { 'aria-label': 'Remove ' + labelText + ' item' });
        item.node = el('li', {}, item.editor.node, remove);
        items.push(item);
        list.appendChild(item.node);
        const focusable = item.node.querySelector('input, select, textarea');
        if (focusable) focusable.focus();
      }, { 'aria-label': 'Add an item to ' + labelText });
      container.appendChild(add);
    }
    container.appendChild(arrayError);
    return {
      node: container,
      collect: function () {
        arrayError.textContent = '';
        let value;
        if (jsonShell) {
          const text = jsonShell.control.value.trim();
          setError(jsonShell, jsonShell.control, '');
          if (text === '') {
            if (!required) return ABSENT;
            value = [];
          } else {
            try {
              value = JSON.parse(text);
            } catch (e) {
              value = INVALID;
            }
            if (!Array.isArray(value)) {
              setError(jsonShell, jsonShell.control, labelText + ' must be one JSON array, like [1, 2]');
              return INVALID;
            }
          }
        } else {
          if (items.length === 0 && !required) return ABSENT;
          value = [];
          let invalid = false;
          for (const item of items) {
            const v = item.editor.collect();
            if (v === INVALID) invalid = true;
            else value.push(v === ABSENT ? null : v);
          }
          if (invalid) return INVALID;
        }
        const problem = checkValue(s, value);
        if (problem) {
          arrayError.textContent = labelText + ' ' + problem;
          return INVALID;
        }
        return value;
      },
    };
  }

  function tryForm(runnerId, pluginId, toolName, row) {
    const definition = row.definition || {};
    const schema = isObject(definition.inputSchema) ? definition.inputSchema : { type: 'object' };
    const hints = hintsOf(definition);
    const destructive = mayBeDestructive(hints);
    const root = objectEditor(schema, 'arguments', true, true);
    const summary = el('p', { class: 'field-error form-summary', attrs: { role: 'alert' } });
    const run = el('button', { class: destructive ? 'danger run-button' : 'primary run-button', attrs: { type: 'submit' }, text: destructive ? 'Run (asks to confirm)' : 'Run' });
    const confirmArea = el('div', { class: 'confirm-area' });
    const result = el('div', { class: 'call-result', attrs: { 'aria-live': 'polite' } });
    const form = el('form', { class: 'try-form', attrs: { novalidate: true, 'aria-label': 'Try ' + toolName } },
      el('h4', {}, 'Try ', el('code', { text: toolName })),
      destructive ? el('p', { class: 'panel warning' }, hints.destructive === true
        ? '\u26a0 This tool says it is destructive: running it may change or delete data. You will be asked to confirm.'
        : '\u26a0 This tool does not say it is read-only or non-destructive, so it may change or delete data. You will be asked to confirm.') : null,
      root.node, summary, el('p', {}, run), confirmArea, result);

    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      if (run.disabled) return;
      confirmArea.replaceChildren();
      const value = root.collect();
      if (value === INVALID) {
        summary.textContent = 'Some arguments are invalid (see above). Nothing was sent.';
        const bad = form.querySelector('[aria-invalid="true"]');
        if (bad) bad.focus();
        return;
      }
      summary.textContent = '';
      const args = value === ABSENT ? {} : value;
      if (destructive) {
        askToConfirm(args);
        return;
      }
      await send(args);
    });

    function askToConfirm(args) {
      const textId = uid('confirm');
      const box = el('div', { class: 'panel confirm call-confirm', attrs: { role: 'alertdialog', 'aria-labelledby': textId } },
        el('p', { attrs: { id: textId } }, el('strong', { text: 'Confirm: ' }), 'run ', el('code', { text: toolName }), ' with these arguments? It may change or delete data.'),
        el('pre', { text: pretty(args) }));
      const yes = button('Yes, run it', 'danger confirm-run', async () => {
        confirmArea.replaceChildren();
        await send(args);
      });
      const no = button('Cancel', 'cancel-run', () => {
        confirmArea.replaceChildren();
        run.focus();
      });
      box.appendChild(el('p', {}, yes, ' ', no));
      confirmArea.replaceChildren(box);
      no.focus();
    }

    async function send(args) {
      run.disabled = true;
      result.replaceChildren(el('p', { class: 'muted', text: 'Describing, then calling\u2026' }));
      const described = await tool({ action: 'describe', runner: runnerId, plugin: pluginId, tool: toolName });
      if (!described.success) {
        run.disabled = false;
        result.replaceChildren(failureView(described.output, 'Describe'));
        return;
      }
      const fresh = isObject(described.output.tool) ? described.output.tool : {};
      if (!sameJson(fresh.inputSchema, definition.inputSchema)) {
        row.definition = fresh;
        result.replaceChildren(el('div', { class: 'panel warning', attrs: { role: 'alert' } },
          el('p', { text: 'The tool\u2019s input schema changed since this form was built. Nothing was called. Close and open \u201cTry it\u201d again to get the new form.' })));
        return;
      }
      const called = await tool({ action: 'call', binding: str(described.output.binding), arguments: args });
      if (!called.success) {
        const unknown = called.output.dispatch === 'outcome_unknown';
        run.disabled = unknown;
        if (unknown) run.textContent = 'Not offered again (outcome unknown)';
        result.replaceChildren(failureView(called.output, 'The call'));
        return;
      }
      run.disabled = false;
      result.replaceChildren(resultView(called.output));
    }

    return form;
  }

  function resultView(r) {
    const isError = r.isError === true;
    const panel = el('div', { class: 'panel call-report ' + (isError ? 'failure' : 'success'), attrs: { 'data-is-error': isError ? 'true' : 'false', role: 'status' } },
      el('p', {}, el('strong', { text: isError ? 'The tool reported an error (isError: true).' : 'Result (isError: false).' })));
    const content = Array.isArray(r.content) ? r.content : [];
    panel.appendChild(el('h5', { text: 'content' }));
    if (content.length === 0) panel.appendChild(el('p', { class: 'muted', text: 'No content items.' }));
    for (const item of content) {
      if (isObject(item) && item.type === 'text' && typeof item.text === 'string') {
        panel.appendChild(el('pre', { class: 'content-text', text: item.text }));
      } else {
        panel.appendChild(el('pre', { class: 'content-other', text: pretty(item) }));
      }
    }
    if (Object.prototype.hasOwnProperty.call(r, 'structuredContent')) {
      panel.appendChild(el('h5', { text: 'structuredContent' }));
      panel.appendChild(el('pre', { class: 'structured-content', text: pretty(r.structuredContent) }));
    }
    return panel;
  }

  // ------------------------------------------------------------------------------------------
  // Start.
  // ------------------------------------------------------------------------------------------

  function start() {
    document.getElementById('token-form').addEventListener('submit', (event) => {
      event.preventDefault();
      const token = document.getElementById('token-input').value.trim();
      if (!token) {
        showTokenError('Paste a token first.');
        return;
      }
      connect(token);
    });
    document.getElementById('forget-button').addEventListener('click', () => signOut(''));
    document.getElementById('refresh-button').addEventListener('click', () => loadAll());
    let saved = null;
    try {
      saved = sessionStorage.getItem(TOKEN_KEY);
    } catch (e) { /* memory only */ }
    if (saved) connect(saved);
    else document.getElementById('token-input').focus();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
