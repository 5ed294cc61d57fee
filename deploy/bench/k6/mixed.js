// A mixed workload through the gateway, as the three apps make it (`make bench-load`): people
// signing in and refreshing their sessions, browsing and searching the catalog, saving edits,
// liking photos, posting and reading the feed, customers ordering catering (and cancelling), and
// realtime subscribers holding a WebSocket open. Under `splash up`, the tracking simulator's
// drivers and customers run beside it. Every request is tagged with its endpoint; handleSummary
// writes each one's throughput and p50/p95/p99 to $RESULTS (JSON) for report.py.
import http from 'k6/http';
import ws from 'k6/ws';
import { check } from 'k6';
import exec from 'k6/execution';

const GATEWAY = __ENV.GATEWAY || 'http://127.0.0.1:8080';
const DURATION = __ENV.DURATION || '60s';
const SCALE = Number(__ENV.SCALE || '1');
const PASSWORD = 'load test pass 1';

// The load, per second, of each flow (times SCALE); each flow makes the calls listed in it.
const RATES = { session: 5, browse: 30, edit: 2, social: 20, order: 2 };
const ENDPOINTS = [
  'POST /auth/v1/token?grant_type=password', 'POST /auth/v1/token?grant_type=refresh_token',
  'GET /v1/search/photos', 'GET /v1/photos', 'GET /v1/photos/{id}',
  'POST /v1/edits', 'GET /v1/edits/{id}',
  'PUT /v1/likes/{photoKey}', 'DELETE /v1/likes/{photoKey}', 'GET /v1/feed', 'POST /v1/posts',
  'GET /v1/restaurants', 'GET /v1/restaurants/{id}', 'POST /v1/orders', 'POST /v1/orders/{id}/transitions',
];

function flow(name, exec) {
  return {
    executor: 'constant-arrival-rate', exec, rate: Math.max(1, Math.round(RATES[name] * SCALE)), timeUnit: '1s',
    duration: DURATION, preAllocatedVUs: 20, maxVUs: 100,
  };
}

const thresholds = { http_req_failed: ['rate==0'], checks: ['rate==1'] };
for (const name of ENDPOINTS) {
  // A threshold per endpoint makes k6 keep its own figures (a submetric) for the summary.
  thresholds[`http_req_duration{name:${name}}`] = ['max>=0'];
  thresholds[`http_reqs{name:${name}}`] = ['count>=0'];
  thresholds[`http_req_failed{name:${name}}`] = ['rate>=0'];
}

export const options = {
  scenarios: {
    session: flow('session', 'session'), browse: flow('browse', 'browse'), edit: flow('edit', 'edit'),
    social: flow('social', 'social'), order: flow('order', 'order'),
    realtime: { executor: 'constant-vus', exec: 'realtime', vus: Math.round(50 * SCALE), duration: DURATION },
  },
  thresholds,
  summaryTrendStats: ['avg', 'p(50)', 'p(95)', 'p(99)', 'max', 'count'],
  setupTimeout: '120s',
};

function call(method, url, body, tag, token, extraHeaders = {}) {
  const headers = Object.assign({ 'Content-Type': 'application/json' }, extraHeaders);
  if (token) headers.Authorization = `Bearer ${token}`;
  return http.request(method, `${GATEWAY}${url}`, body === null ? null : JSON.stringify(body), { headers, tags: { name: tag } });
}

// 20 people, the photos to use, and a restaurant near the centre with its menu.
export function setup() {
  const run = Date.now();
  const people = [];
  for (let index = 0; index < 20; index++) {
    const email = `load-${run}-${index}@load.splash.example`;
    const response = http.post(`${GATEWAY}/auth/v1/signup`, JSON.stringify({ email, password: PASSWORD, data: { username: `load${run % 100000}x${index}` } }),
      { headers: { 'Content-Type': 'application/json' } });
    if (response.status !== 200) throw new Error(`sign-up: ${response.status} ${response.body}`);
    people.push({ email, token: response.json('access_token'), refresh: response.json('refresh_token') });
  }
  const search = http.get(`${GATEWAY}/v1/search/photos?query=flower&per_page=20`);
  const photos = search.json('results').map((photo) => photo.id);
  const token = people[0].token;
  const near = http.get(`${GATEWAY}/v1/restaurants?near=60.1699,24.9384&radius=3000&limit=10`, { headers: { Authorization: `Bearer ${token}` } });
  const restaurants = [];
  for (const summary of near.json('items')) {
    const restaurant = http.get(`${GATEWAY}/v1/restaurants/${summary.id}`, { headers: { Authorization: `Bearer ${token}` } }).json();
    if (restaurant.menu && restaurant.menu.length > 0) restaurants.push({ id: restaurant.id, item: restaurant.menu[0].id });
  }
  if (photos.length === 0 || restaurants.length === 0) throw new Error('no photos or no restaurants to use');
  return { people, photos, restaurants };
}

const pick = (list) => list[Math.floor(Math.random() * list.length)];
const person = (data) => data.people[exec.scenario.iterationInTest % data.people.length];

export function session(data) {
  const who = person(data);
  const signIn = call('POST', '/auth/v1/token?grant_type=password', { email: who.email, password: PASSWORD }, 'POST /auth/v1/token?grant_type=password');
  check(signIn, { 'signed in': (r) => r.status === 200 });
  const refresh = call('POST', '/auth/v1/token?grant_type=refresh_token', { refresh_token: signIn.json('refresh_token') }, 'POST /auth/v1/token?grant_type=refresh_token');
  check(refresh, { 'refreshed': (r) => r.status === 200 && r.json('access_token') });
}

export function browse(data) {
  const token = Math.random() < 0.5 ? person(data).token : null;
  const query = pick(['flower', 'yellow', 'aqua', 'green', 'mountain lake']);
  check(call('GET', `/v1/search/photos?query=${encodeURIComponent(query)}&per_page=10`, null, 'GET /v1/search/photos', token), { 'searched': (r) => r.status === 200 });
  check(call('GET', `/v1/photos?page=${1 + Math.floor(Math.random() * 3)}&per_page=10`, null, 'GET /v1/photos', token), { 'listed': (r) => r.status === 200 });
  check(call('GET', `/v1/photos/${pick(data.photos)}`, null, 'GET /v1/photos/{id}', token), { 'photo': (r) => r.status === 200 });
}

export function edit(data) {
  const who = person(data);
  const created = call('POST', '/v1/edits', { source: { unsplashPhotoId: pick(data.photos) }, filters: [{ name: 'sepia' }, { name: 'vignette', intensity: Math.random() }] },
    'POST /v1/edits', who.token, { 'Idempotency-Key': `load-${exec.scenario.iterationInTest}-${Date.now()}` });
  check(created, { 'edit accepted': (r) => r.status === 201 || r.status === 202 });
  if (created.status < 300) {
    check(call('GET', `/v1/edits/${created.json('id')}`, null, 'GET /v1/edits/{id}', who.token), { 'edit read': (r) => r.status === 200 });
  }
}

export function social(data) {
  const who = person(data);
  const key = `unsplash:${pick(data.photos)}`;
  check(call('PUT', `/v1/likes/${key}`, null, 'PUT /v1/likes/{photoKey}', who.token), { 'liked': (r) => r.status === 200 || r.status === 201 });
  check(call('GET', '/v1/feed?limit=20', null, 'GET /v1/feed', who.token), { 'feed': (r) => r.status === 200 });
  check(call('DELETE', `/v1/likes/${key}`, null, 'DELETE /v1/likes/{photoKey}', who.token), { 'unliked': (r) => r.status === 204 });
  if (exec.scenario.iterationInTest % 10 === 0) {
    const post = call('POST', '/v1/posts', { photo: { unsplashPhotoId: pick(data.photos) }, caption: `Load ${exec.scenario.iterationInTest} 🌼` }, 'POST /v1/posts', who.token,
      { 'Idempotency-Key': `load-post-${exec.scenario.iterationInTest}-${Date.now()}` });
    check(post, { 'posted': (r) => r.status === 201 });
  }
}

export function order(data) {
  const who = person(data);
  check(call('GET', '/v1/restaurants?near=60.1699,24.9384&radius=1500&limit=5', null, 'GET /v1/restaurants', who.token), { 'restaurants': (r) => r.status === 200 });
  const restaurant = pick(data.restaurants);
  check(call('GET', `/v1/restaurants/${restaurant.id}`, null, 'GET /v1/restaurants/{id}', who.token), { 'restaurant': (r) => r.status === 200 });
  const placed = call('POST', '/v1/orders', { restaurantId: restaurant.id, items: [{ menuItemId: restaurant.item, quantity: 2 }],
    dropoff: { address: 'Mannerheimintie 22', lat: 60.1727 + Math.random() * 0.004, lng: 24.9335 + Math.random() * 0.004 } },
    'POST /v1/orders', who.token, { 'Idempotency-Key': `load-order-${exec.scenario.iterationInTest}-${Date.now()}` });
  check(placed, { 'placed': (r) => r.status === 201 });
  if (placed.status === 201) {
    // The customer cancels before the kitchen starts, so the restaurants' queues stay short.
    const cancelled = call('POST', `/v1/orders/${placed.json('id')}/transitions`, { to: 'cancelled', reason: 'load test' }, 'POST /v1/orders/{id}/transitions', who.token, { 'If-Match': '*' });
    check(cancelled, { 'cancelled': (r) => r.status === 200 });
  }
}

export function realtime(data) {
  const who = data.people[(exec.vu.idInTest - 1) % data.people.length];
  const response = ws.connect(`${GATEWAY.replace('http', 'ws')}/v1/realtime?channels=me,profiles`, { headers: { Authorization: `Bearer ${who.token}` } }, (socket) => {
    socket.setTimeout(() => socket.close(), 20000);
  });
  check(response, { 'realtime connected': (r) => r && r.status === 101 });
}

export function handleSummary(data) {
  const out = { config: { gateway: GATEWAY, duration: DURATION, scale: SCALE, rates: RATES, realtimeClients: Math.round(50 * SCALE) }, endpoints: {}, totals: {} };
  for (const name of ENDPOINTS) {
    const duration = data.metrics[`http_req_duration{name:${name}}`];
    const requests = data.metrics[`http_reqs{name:${name}}`];
    const failed = data.metrics[`http_req_failed{name:${name}}`];
    if (duration && requests) out.endpoints[name] = { requests: requests.values.count, rate: requests.values.rate, failed: failed ? failed.values.rate : null, ...duration.values };
  }
  for (const name of ['http_req_failed', 'checks', 'http_reqs', 'ws_sessions', 'ws_connecting']) {
    if (data.metrics[name]) out.totals[name] = data.metrics[name].values;
  }
  return { [__ENV.RESULTS || 'k6-results.json']: JSON.stringify(out, null, 2), stdout: `\nk6: ${Object.keys(out.endpoints).length} endpoints, failed rate ${out.totals.http_req_failed ? out.totals.http_req_failed.rate : '?'}\n` };
}
