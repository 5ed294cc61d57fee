// The Splash console's pages. No framework, no build step: each page is a function that draws
// into <main> and keeps itself current, from the console's JSON API and the admin channel.
'use strict';

const main = document.getElementById('main');
const statusLine = document.getElementById('status');

/** Makes an element: el('td', {class: 'num'}, 'text', child…). */
function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === false || value === null || value === undefined) continue;
    if (name.startsWith('on')) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const svgNS = 'http://www.w3.org/2000/svg';
function svg(tag, attributes = {}, ...children) {
  const node = document.createElementNS(svgNS, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
}

function say(text) { statusLine.textContent = text; }

/** Calls the console's API; a lost session goes back to the sign-in. */
async function api(path, options = {}) {
  const response = await fetch('/console/api/' + path, { credentials: 'same-origin', redirect: 'manual', ...options });
  if (response.status === 401 || response.type === 'opaqueredirect') {
    location.assign('/console/login');
    throw new Error('signed out');
  }
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(body.detail || body.msg || body.message || response.statusText || String(response.status));
  return body;
}

function send(path, method, body) {
  return api(path, { method, headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
}

/** Follows the admin channel (SSE, read with fetch so that every event type arrives), resuming
 *  after the last event id when the stream breaks. */
function live(onEvent) {
  let lastEventID = null;
  let stopped = false;
  async function connect() {
    while (!stopped) {
      try {
        const headers = lastEventID ? { 'Last-Event-ID': lastEventID } : {};
        const response = await fetch('/console/api/events', { credentials: 'same-origin', headers, redirect: 'manual' });
        if (response.status === 401 || response.type === 'opaqueredirect') { location.assign('/console/login'); return; }
        if (!response.ok || !response.body) throw new Error('stream refused: ' + response.status);
        say('Live');
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += value;
          let end;
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            let id = null, data = '';
            for (const line of block.split('\n')) {
              if (line.startsWith('id: ')) id = line.slice(4);
              else if (line.startsWith('data: ')) data += line.slice(6);
            }
            if (!data) continue;
            if (id) lastEventID = id;
            try {
              const event = JSON.parse(data);
              if (event.specversion) onEvent(event);
            } catch (error) { /* a control message (close reason): the loop reconnects */ }
          }
        }
      } catch (error) {
        say('Reconnecting…');
      }
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
  connect();
  return () => { stopped = true; };
}

function timeText(iso) {
  if (!iso) return '';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleTimeString([], { hour12: false });
}

function shortID(id) { return id ? String(id).slice(0, 8) : '–'; }

function table(headings, rows, label) {
  return el('div', { class: 'scroll' }, el('table', { 'aria-label': label },
    el('thead', {}, el('tr', {}, headings.map((heading) => el('th', { scope: 'col', class: heading.num ? 'num' : null }, heading.text || heading)))),
    el('tbody', {}, rows)));
}

// MARK: Events

function eventsPage() {
  const limit = 300;
  const events = [];
  const counts = new Map(); // type → Map(minute → count)
  let paused = false, waiting = 0;
  const filter = el('input', { type: 'search', id: 'filter', placeholder: 'type or key contains…', 'aria-label': 'Filter by type or key' });
  const pause = el('button', { type: 'button', id: 'pause', 'aria-pressed': 'false' }, 'Pause');
  const shown = el('span', { id: 'shown' });
  const chart = el('div', { id: 'chart' });
  const body = el('tbody', { id: 'event-rows' });
  main.replaceChildren(
    el('h1', {}, 'Events'),
    el('p', {}, 'Every event of every public topic, newest first, as it happens.'),
    el('div', { class: 'controls' }, filter, pause, shown),
    el('h2', {}, 'Events per minute, by type'), chart,
    el('h2', {}, 'Latest'),
    el('div', { class: 'scroll' }, el('table', { 'aria-label': 'Latest events' },
      el('thead', {}, el('tr', {}, el('th', { scope: 'col' }, 'Time'), el('th', { scope: 'col' }, 'Type'), el('th', { scope: 'col' }, 'Key'), el('th', { scope: 'col', class: 'hide-narrow' }, 'Payload'))),
      body)));

  function matches(event) {
    const wanted = filter.value.trim().toLowerCase();
    return !wanted || event.type.toLowerCase().includes(wanted) || String(event.subject || '').toLowerCase().includes(wanted);
  }
  function row(event) {
    return el('tr', { 'data-type': event.type, 'data-key': event.subject || '' },
      el('td', {}, timeText(event.time)), el('td', {}, el('code', {}, event.type)), el('td', {}, el('code', {}, event.subject || '–')),
      el('td', { class: 'payload hide-narrow' }, JSON.stringify(event.data).slice(0, 300)));
  }
  function render() {
    body.replaceChildren(...events.filter(matches).slice(0, 150).map(row));
    shown.textContent = paused ? `Paused: ${waiting} new event(s) waiting` : `${events.length} event(s) kept`;
  }
  function renderChart() {
    const now = Math.floor(Date.now() / 60000);
    const minutes = Array.from({ length: 10 }, (_, index) => now - 9 + index);
    const types = [...counts.keys()].sort();
    if (types.length === 0) { chart.replaceChildren(el('p', { class: 'empty' }, 'No events yet.')); return; }
    const max = Math.max(1, ...types.flatMap((type) => minutes.map((minute) => counts.get(type).get(minute) || 0)));
    const labelWidth = 290, barWidth = 22, rowHeight = 20;
    const graphic = svg('svg', { class: 'chart', role: 'img', width: labelWidth + minutes.length * barWidth + 60, height: types.length * rowHeight + 4,
      'aria-label': 'Events per minute for the last 10 minutes, one row per type' });
    types.forEach((type, index) => {
      const y = index * rowHeight;
      graphic.append(svg('text', { x: 0, y: y + 14 }, type));
      minutes.forEach((minute, column) => {
        const count = counts.get(type).get(minute) || 0;
        const height = Math.round((count / max) * (rowHeight - 4));
        const bar = svg('rect', { x: labelWidth + column * barWidth, y: y + rowHeight - 2 - height, width: barWidth - 4, height: Math.max(height, count ? 1 : 0) });
        bar.append(svg('title', {}, `${type}: ${count} in the minute starting ${new Date(minute * 60000).toLocaleTimeString([], { hour12: false })}`));
        graphic.append(bar);
      });
      graphic.append(svg('text', { x: labelWidth + minutes.length * barWidth + 4, y: y + 14 }, `${counts.get(type).get(now) || 0}/min`));
    });
    chart.replaceChildren(graphic);
  }
  filter.addEventListener('input', render);
  pause.addEventListener('click', () => {
    paused = !paused;
    pause.textContent = paused ? 'Resume' : 'Pause';
    pause.setAttribute('aria-pressed', String(paused));
    waiting = 0;
    render();
  });
  live((event) => {
    const minute = Math.floor(Date.now() / 60000);
    if (!counts.has(event.type)) counts.set(event.type, new Map());
    counts.get(event.type).set(minute, (counts.get(event.type).get(minute) || 0) + 1);
    events.unshift(event);
    if (events.length > limit) events.length = limit;
    if (paused) { waiting += 1; shown.textContent = `Paused: ${waiting} new event(s) waiting`; return; }
    render();
  });
  render();
  renderChart();
  setInterval(renderChart, 1000);
}

// MARK: Consumers

/** The render workers and the partitions of render.jobs each holds. */
function workersTable(workers, group) {
  const summary = el('p', {}, `${workers.filter((worker) => !worker.silent).length} render worker(s) share the ${group.partitions.length} partitions of render.jobs; ${group.lag} job(s) wait to be taken.`);
  if (workers.length === 0) return el('div', { id: 'render-workers' }, summary);
  return el('div', { id: 'render-workers' }, summary, table(['Worker', 'Render threads', 'Partitions', 'Last seen', 'State'],
    workers.map((worker) => el('tr', { 'data-worker': worker.id },
      el('td', {}, el('code', {}, `${worker.host} · pid ${worker.pid}`)), el('td', { class: 'num' }, worker.threads),
      el('td', {}, worker.partitions.length ? worker.partitions.join(', ') : 'none'), el('td', {}, timeText(worker.seenAt)),
      el('td', { class: worker.silent ? 'warn' : null }, worker.silent ? 'silent' : 'running'))), 'Render workers'));
}

function consumersPage() {
  const content = el('div', { id: 'groups' }, el('p', {}, 'Loading…'));
  main.replaceChildren(el('h1', {}, 'Consumers'),
    el('p', {}, 'Each consumer group: where it is in every partition it reads, and how far behind. Refreshed every 2 seconds.'), content);
  async function refresh() {
    try {
      const { groups, renderWorkers } = await api('consumers');
      content.replaceChildren(...groups.map((group) => el('section', { 'data-group': group.group },
        el('h2', {}, `${group.group} (${group.service}) — lag ${group.lag}`),
        group.group === 'edit-render-workers' ? workersTable(renderWorkers, group) : null,
        table([{ text: 'Topic' }, { text: 'Partition', num: true }, { text: 'Committed', num: true }, { text: 'End', num: true }, { text: 'Lag', num: true }],
          group.partitions.map((partition) => el('tr', {},
            el('td', {}, el('code', {}, partition.topic)), el('td', { class: 'num' }, partition.partition),
            el('td', { class: 'num' }, partition.committed === null ? 'none yet' : partition.committed), el('td', { class: 'num' }, partition.end),
            el('td', { class: 'num' + (partition.lag > 0 ? ' lagging' : '') }, partition.lag))),
          `Partitions of ${group.group}`))));
      say('Updated ' + new Date().toLocaleTimeString([], { hour12: false }));
    } catch (error) { say('Could not load: ' + error.message); }
  }
  refresh();
  setInterval(refresh, 2000);
}

// MARK: Dead letters

function deadLettersPage() {
  const content = el('div', { id: 'dead-letters' }, el('p', {}, 'Loading…'));
  main.replaceChildren(el('h1', {}, 'Dead letters'),
    el('p', {}, 'Events a consumer gave up on, per topic, with why. Replaying publishes the event to its topic again (as splash dlq replay does).'), content);
  let busy = false;
  async function replay(topic, body, what) {
    if (!window.confirm(`Replay ${what} to ${topic}?`)) return;
    busy = true;
    try {
      const result = await send(`dead-letters/${encodeURIComponent(topic)}/replay`, 'POST', body);
      say(`Replayed ${result.replayed.length} event(s) to ${topic}`);
    } catch (error) { say('Replay failed: ' + error.message); }
    busy = false;
    await refresh();
  }
  async function refresh() {
    if (busy) return;
    try {
      const { topics } = await api('dead-letters');
      content.replaceChildren(...topics.map((topic) => el('section', { 'data-topic': topic.topic },
        el('h2', {}, `${topic.topic} — ${topic.letters.length} waiting`, topic.replayed ? `, ${topic.replayed} replayed` : ''),
        topic.letters.length === 0 ? el('p', { class: 'empty' }, 'None waiting.') : el('div', {},
          el('button', { type: 'button', class: 'quiet', onclick: () => replay(topic.topic, { all: true }, `all ${topic.letters.length} dead letter(s)`) }, `Replay all ${topic.letters.length}`),
          ...topic.letters.map((letter) => el('article', { class: 'card letter', 'data-letter': `${topic.deadLetterTopic}/${letter.partition}/${letter.offset}` },
            el('div', {}, el('code', {}, letter.type || 'not a CloudEvent'), ' · key ', el('code', {}, letter.key || '–')),
            el('div', { class: 'error' }, letter.error),
            el('div', { class: 'meta' }, `${letter.attempts} attempt(s) · from ${letter.from} · parked ${timeText(letter.parkedAt)} · ${topic.deadLetterTopic}[${letter.partition}]@${letter.offset}`),
            el('details', {}, el('summary', {}, 'Event'), el('pre', { class: 'payload' }, letter.event)),
            el('button', { type: 'button', onclick: () => replay(topic.topic, { partition: letter.partition, offset: letter.offset }, 'this dead letter') }, 'Replay')))))));
      say('Updated ' + new Date().toLocaleTimeString([], { hour12: false }));
    } catch (error) { say('Could not load: ' + error.message); }
  }
  refresh();
  setInterval(refresh, 5000);
}

// MARK: Users

function usersPage() {
  const roles = ['customer', 'driver', 'restaurant', 'admin'];
  const summary = el('p', { id: 'user-count' }, 'Loading…');
  const list = el('div', { id: 'users' });
  const deleted = el('div', { id: 'deletions' }, 'Loading…');
  main.replaceChildren(el('h1', {}, 'Users'), summary, el('h2', {}, 'Newest sign-ups'), list, el('h2', {}, 'Deleted accounts'), deleted);
  const services = ['social', 'edit-render', 'photo-catalog', 'tracking', 'notify'];
  const time = (text) => new Date(text).toLocaleTimeString([], { hour12: false });
  function erased(entry) {
    if (!entry.erasedAt) return el('td', { class: 'waiting' }, 'waiting');
    const counts = Object.entries(entry.counts || {}).filter(([, count]) => count > 0).map(([name, count]) => `${name} ${count}`);
    const after = entry.seconds === undefined ? '' : ` (+${entry.seconds.toFixed(2)} s)`;
    return el('td', { title: entry.erasedAt }, `✓ ${time(entry.erasedAt)}${after}`, el('br'), counts.join(', ') || 'nothing kept');
  }
  async function refreshDeletions() {
    try {
      const { deletions } = await api('deletions');
      deleted.replaceChildren(deletions.length === 0 ? el('p', {}, 'No account deleted in the last 30 days.')
        : table(['Account', 'Deleted', 'Erased'].concat(services), deletions.map((deletion) => el('tr', { 'data-deleted': deletion.userId },
          el('td', {}, el('code', {}, deletion.userId)), el('td', {}, deletion.deletedAt ? time(deletion.deletedAt) : '–'),
          el('td', {}, deletion.complete ? 'complete' : `${deletion.services.filter((entry) => entry.erasedAt).length} of ${services.length}`),
          deletion.services.map(erased))), 'Deleted accounts, newest first, and what each service erased'));
    } catch (error) { say('Could not load the deletions: ' + error.message); }
  }
  async function setRole(user, role) {
    if (!window.confirm(`Make ${user.email} a ${role}?`)) { await refresh(); return; }
    try {
      await send(`users/${user.id}/role`, 'PUT', { role });
      say(`${user.email} is now a ${role}`);
    } catch (error) { say('Could not set the role: ' + error.message); }
    await refresh();
  }
  async function refresh() {
    try {
      const { total, users } = await api('users');
      summary.textContent = `${total} user(s).`;
      list.replaceChildren(table(['Email', 'Username', 'Role', 'Signed up'], users.map((user) => {
        const role = user.app_metadata && user.app_metadata.role || 'customer';
        const select = el('select', { 'aria-label': `Role of ${user.email}`, 'data-user': user.id },
          roles.map((name) => el('option', { value: name, selected: name === role }, name)));
        select.addEventListener('change', () => setRole(user, select.value));
        return el('tr', { 'data-user': user.id }, el('td', {}, user.email), el('td', {}, user.user_metadata && user.user_metadata.username || '–'),
          el('td', {}, select), el('td', {}, new Date(user.created_at).toLocaleString([], { hour12: false })));
      }), 'Users, newest first'));
    } catch (error) { say('Could not load: ' + error.message); }
  }
  refresh();
  refreshDeletions();
  live((event) => {
    if (event.type.startsWith('auth.user.') || event.type === 'auth.profile.updated.v1') refresh();
    if (event.type === 'auth.user.deleted.v1' || event.type.endsWith('.user.erased.v1')) refreshDeletions();
  });
}

// MARK: Deliveries

async function deliveriesPage() {
  main.replaceChildren(el('h1', {}, 'Deliveries'), el('p', {}, 'Loading the map…'));
  const [roads, restaurants] = await Promise.all([api('roads'), api('restaurants').catch(() => ({ items: [] }))]);
  const lats = roads.nodes.map((node) => node[0]), lngs = roads.nodes.map((node) => node[1]);
  const south = Math.min(...lats), north = Math.max(...lats), west = Math.min(...lngs), east = Math.max(...lngs);
  const kx = 1000 / (east - west), ky = kx / Math.cos(((north + south) / 2) * Math.PI / 180);
  const width = 1000, height = Math.round((north - south) * ky);
  const point = (lat, lng) => [((lng - west) * kx).toFixed(1), ((north - lat) * ky).toFixed(1)];
  let path = '';
  for (const [from, to] of roads.edges) {
    const [x1, y1] = point(...roads.nodes[from]), [x2, y2] = point(...roads.nodes[to]);
    path += `M${x1} ${y1}L${x2} ${y2}`;
  }
  const map = svg('svg', { class: 'map', id: 'map', viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': 'Map of central Helsinki with restaurants and drivers' });
  map.append(svg('path', { class: 'roads', d: path }));
  for (const restaurant of restaurants.items || []) {
    const location = restaurant.location || {};
    if (typeof location.lat !== 'number') continue;
    const [x, y] = point(location.lat, location.lng);
    const mark = svg('rect', { class: 'restaurant', x: x - 3, y: y - 3, width: 6, height: 6 });
    mark.append(svg('title', {}, `Restaurant: ${restaurant.name}`));
    map.append(mark);
  }
  const driversLayer = svg('g', { id: 'drivers' });
  map.append(driversLayer);
  const list = el('ul', { class: 'drivers', id: 'driver-list', 'aria-label': 'Drivers' });
  const shift = el('p', { id: 'on-shift' }, 'On shift: –');
  main.replaceChildren(el('h1', {}, 'Deliveries'),
    el('p', {}, `Drivers move as their positions arrive. Squares are restaurants (${(restaurants.items || []).length}); a driver's label is the first letters of their id, and the list says what each is doing. Who is on shift comes from the drivers' presence on the Realtime channel "drivers".`),
    el('div', { class: 'map-wrap' }, el('div', {}, map, el('p', { class: 'attribution' }, '© OpenStreetMap contributors (ODbL)')),
      el('div', {}, el('h2', {}, 'Drivers'), shift, list)));

  const drivers = new Map(); // driver id → {marker, item, order, eta}
  const orders = new Map(); // order id → status
  let onShift = new Set(); // driver ids present on the drivers channel
  function describe(driver) {
    const order = driver.order ? `order ${shortID(driver.order)}: ${orders.get(driver.order) || 'assigned'}` : 'no order';
    const eta = typeof driver.eta === 'number' ? `, ETA ${Math.round(driver.eta / 60)} min` : '';
    const present = onShift.has(driver.id) ? ' (on shift)' : '';
    return `Driver ${shortID(driver.id)}${present} — ${order}${eta}`;
  }
  async function followShifts() {
    while (document.body.contains(map)) {
      try {
        const presence = await api('presence/drivers');
        onShift = new Set(Object.keys(presence.state || {}));
        shift.textContent = `On shift: ${onShift.size}`;
        for (const driver of drivers.values()) update(driver);
      } catch (error) { /* the next look */ }
      await new Promise((resolve) => setTimeout(resolve, 2000));
    }
  }
  followShifts();
  const asked = new Set(); // orders whose status was asked of tracking
  function learn(order) {
    if (!order || orders.has(order) || asked.has(order)) return;
    asked.add(order);
    api(`orders/${order}`).then((found) => {
      if (!orders.has(order) && found.status) orders.set(order, found.status);
      for (const driver of drivers.values()) if (driver.order === order) update(driver);
    }).catch(() => {});
  }
  function update(driver) {
    driver.item.textContent = describe(driver);
    driver.title.textContent = describe(driver);
    driver.marker.setAttribute('class', (driver.order ? 'driver busy' : 'driver') + (onShift.has(driver.id) ? ' on-shift' : ''));
  }
  live((event) => {
    const data = event.data || {};
    if (event.type === 'tracking.driver.location-updated.v2') {
      let driver = drivers.get(data.driverId);
      if (!driver) {
        const marker = svg('g', { class: 'driver', id: `driver-${data.driverId}`, 'data-driver': data.driverId });
        const title = svg('title', {}, '');
        marker.append(svg('circle', { r: 11 }), svg('text', { x: 14, y: 6 }, shortID(data.driverId).slice(0, 4)), title);
        driversLayer.append(marker);
        const item = el('li', { 'data-driver': data.driverId });
        list.append(item);
        driver = { id: data.driverId, marker, title, item };
        drivers.set(data.driverId, driver);
      }
      const [x, y] = point(data.latitude, data.longitude);
      driver.marker.setAttribute('transform', `translate(${x} ${y})`);
      driver.order = data.orderId || null;
      driver.eta = data.etaSeconds;
      learn(driver.order);
      update(driver);
    } else if (event.type === 'tracking.order.status-changed.v2') {
      orders.set(data.orderId, data.status);
      for (const driver of drivers.values()) if (driver.order === data.orderId) update(driver);
    }
  });
}

// MARK: Notifications

/** notify's pushes, newest first, as an iPhone's lock screen would show them, with how each went;
 *  kept current as the events that make them arrive. */
function notificationsPage() {
  const list = el('ol', { id: 'notifications', class: 'lock-screen', 'aria-label': 'Notifications, newest first' });
  const summary = el('p', { id: 'notification-count' }, 'Loading…');
  main.replaceChildren(el('h1', {}, 'Notifications'),
    el('p', {}, 'Pushes to iPhones as their lock screens show them, newest first. Without an APNs key they go to notify\'s sink.'),
    summary, list);
  async function refresh() {
    try {
      const { items } = await api('notifications');
      summary.textContent = `${items.length} latest.`;
      list.replaceChildren(...items.map((item) => {
        const alert = (item.payload && item.payload.aps && item.payload.aps.alert) || {};
        return el('li', { class: 'notification', 'data-status': item.status, 'data-kind': item.kind },
          el('div', { class: 'notification-head' },
            el('span', { class: 'app' }, item.topic), el('time', { datetime: item.createdAt }, timeText(item.createdAt))),
          el('strong', {}, alert.title || ''), el('p', {}, alert.body || ''),
          el('p', { class: 'notification-meta' },
            `${item.status}${item.attempts > 1 ? ` after ${item.attempts} attempts` : ''} · ${item.channel} · device ${item.device}… · user ${shortID(item.userId)}`
              + (item.error ? ` · ${item.error}` : '')));
      }));
    } catch (error) { say('Could not load: ' + error.message); }
  }
  refresh();
  setInterval(refresh, 3000);
  live((event) => {
    if (/^(tracking\.order|render\.edit\.(completed|failed)|social\.photo\.liked)/.test(event.type)) setTimeout(refresh, 500);
  });
}

// MARK: Mail

/** The mail notify's catcher kept (no SMTP server configured), newest first; a message's HTML is
 *  shown in a sandboxed frame that runs no script and loads nothing. */
function mailPage() {
  const list = el('div', { id: 'mail-list' });
  const viewer = el('section', { id: 'mail-view', 'aria-label': 'The chosen mail' });
  main.replaceChildren(el('h1', {}, 'Mail'), el('p', {}, 'The mail Splash sends, as caught when no SMTP server is configured.'), list, viewer);
  function show(mail) {
    const frame = el('iframe', { title: `HTML of ${mail.subject}`, sandbox: '', referrerpolicy: 'no-referrer', class: 'mail-html' });
    frame.srcdoc = '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; style-src \'unsafe-inline\'">' + (mail.html || '');
    viewer.replaceChildren(el('h2', {}, mail.subject), el('p', {}, `To ${mail.to} · ${timeText(mail.createdAt)}`),
      el('pre', { class: 'mail-text' }, mail.text || ''), frame);
  }
  async function refresh() {
    try {
      const { items } = await api('mail');
      list.replaceChildren(items.length === 0 ? el('p', {}, 'No mail yet.') : table(['Time', 'To', 'Subject'], items.map((mail) => {
        const open = el('button', { type: 'button', class: 'link' }, mail.subject);
        open.addEventListener('click', () => show(mail));
        return el('tr', { 'data-mail': mail.id }, el('td', {}, timeText(mail.createdAt)), el('td', {}, mail.to), el('td', {}, open));
      }), 'Caught mail, newest first'));
    } catch (error) { say('Could not load: ' + error.message); }
  }
  refresh();
  setInterval(refresh, 5000);
}

// MARK: Start

for (const link of document.querySelectorAll('nav a')) {
  if (link.dataset.page === document.body.dataset.page) link.setAttribute('aria-current', 'page');
}
const pages = {
  events: eventsPage, consumers: consumersPage, 'dead-letters': deadLettersPage, users: usersPage, deliveries: deliveriesPage,
  notifications: notificationsPage, mail: mailPage,
};
document.title = `${document.querySelector('nav a[aria-current="page"]')?.textContent || 'Console'} · Splash console`;
Promise.resolve((pages[document.body.dataset.page] || eventsPage)()).catch((error) => say('Could not load the page: ' + error.message));
