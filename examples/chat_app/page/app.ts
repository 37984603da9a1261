// The example application's page: log in to the app (the backend's /login sets a cookie), get a
// chat token from the backend (/token: a JWT it signs), then talk to strix-chat-server directly
// with the chat client SDK: log in with the token, join the room "lobby" (creating it when it does
// not exist), show its messages and send. When the token expires the SDK says tokenExpired and
// the page asks the backend for a fresh one (chat.refresh): the session goes on. Announcements go
// through the backend (/announce), which posts them with the server API; the list at the bottom
// is what the backend heard through webhooks (/events).
import { ChatClient } from '@strix/chat-client';
import type { ChatMessage } from '@strix/chat-client';

const room_name = 'lobby';
const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const body = document.body;

interface token_answer { token: string; expires_at: number; chat_url: string }
interface session_answer { user: string; name: string }
interface events_answer { events: { type: string; room?: { name: string }; user?: { name: string }; seq?: number }[] }

/// A JSON call to the backend; throws with the backend's error when it refuses.
async function call<T>(method: string, url: string, payload?: unknown): Promise<T> {
  const res = await fetch(url, {
    method,
    headers: payload === undefined ? {} : { 'Content-Type': 'application/json' },
    body: payload === undefined ? undefined : JSON.stringify(payload),
  });
  const answer = await res.json();
  if (!res.ok) throw new Error(answer.reason ?? answer.error ?? `HTTP ${res.status}`);
  return answer as T;
}

/// A line in the room's log, kept in seq order (history and live messages may cross).
function show_message(m: ChatMessage): void {
  const log = $('log');
  if (log.querySelector(`div.chat[data-seq="${m.seq}"]`)) return;
  const line = document.createElement('div');
  line.className = 'chat';
  line.dataset.seq = String(m.seq);
  const who = document.createElement('span');
  who.className = 'who';
  // A message the backend posted through the server API without "from" has no sender account.
  who.textContent = m.sender.name || 'system';
  const text = document.createElement('span');
  text.className = 'text';
  text.textContent = m.text;
  line.append(who, text);
  const later = [...log.querySelectorAll<HTMLElement>('div.chat')].find((d) => BigInt(d.dataset.seq!) > m.seq);
  log.insertBefore(line, later ?? null);
  log.scrollTop = log.scrollHeight;
}

function note(text: string): void {
  const line = document.createElement('div');
  line.className = 'note';
  line.textContent = text;
  $('log').append(line);
}

async function start_chat(me: session_answer): Promise<void> {
  $('login').hidden = true;
  $('chat').hidden = false;
  $('announce').hidden = false;
  $('me').textContent = `${me.name} (${me.user})`;
  body.dataset.login = 'yes';

  const first = await call<token_answer>('POST', '/token');
  const chat = new ChatClient(first.chat_url);
  chat.on('state', (state) => {
    body.dataset.state = state;
    $('conn').textContent = state;
  });
  chat.on('message', (m) => show_message(m));
  chat.on('memberJoined', ({ player }) => note(`${player.name} joined`));
  chat.on('presence', ({ player, online }) => note(`${player.name} is ${online ? 'online' : 'offline'}`));
  chat.on('error', (e) => note(`error: ${e.message}`));
  // The chat server says the token ran out; the backend signs a fresh one while our app session
  // (the cookie) is valid, and the chat session goes on without reconnecting.
  chat.on('tokenExpired', () => {
    call<token_answer>('POST', '/token')
      .then((t) => chat.refresh(t.token))
      .then((expires) => {
        body.dataset.refreshes = String(Number(body.dataset.refreshes) + 1);
        $('expires').textContent = new Date(Number(expires) * 1000).toLocaleTimeString();
      })
      .catch((e) => note(`could not refresh the chat token: ${e.message}`));
  });

  await chat.connect();
  const login = await chat.login({ jwt: first.token });
  $('expires').textContent = new Date(Number(login.expiresAt) * 1000).toLocaleTimeString();
  const room = (await chat.listRooms()).find((r) => r.name === room_name) ?? (await chat.createRoom(room_name));
  if (!login.rooms.some((r) => r.id === room.id) && !chat.rooms.has(room.id)) await chat.joinRoom(room.id);
  for (const m of (await chat.history(room.id, { limit: 50 })).messages) show_message(m);
  $('room-name').textContent = room.name;
  body.dataset.room = String(room.id);

  $('chat-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const input = $<HTMLInputElement>('text');
    chat.send(room.id, input.value).catch((e) => note(`not sent: ${e.message}`));
    input.value = '';
  });
  $('announce-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const input = $<HTMLInputElement>('announce-text');
    const result = $('announce-result');
    call<{ seq: number }>('POST', '/announce', { room_id: String(room.id), text: input.value })
      .then((a) => { result.textContent = `posted as #${a.seq}`; result.dataset.seq = String(a.seq); })
      .catch((e) => { result.textContent = `refused: ${e.message}`; result.dataset.seq = 'error'; });
    input.value = '';
  });
}

async function show_events(): Promise<void> {
  const { events } = await call<events_answer>('GET', '/events');
  const list = $('events');
  list.replaceChildren(...events.slice(-8).map((e) => {
    const li = document.createElement('li');
    li.textContent = [e.type, e.room && `room ${e.room.name}`, e.user && `user ${e.user.name}`, e.seq && `#${e.seq}`]
      .filter(Boolean).join(' ');
    return li;
  }));
}

$('login-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  $('login-error').textContent = '';
  const username = $<HTMLInputElement>('username').value;
  const password = $<HTMLInputElement>('password').value;
  call<session_answer>('POST', '/login', { username, password }).then(
    (me) => start_chat(me).catch(chat_failed),
    (e) => { $('login-error').textContent = e.message; });
});

function chat_failed(e: Error): void {
  note(`the chat did not start: ${e.message}`);
  body.dataset.error = e.message;
}

// Already logged in to the app (a reload): straight to the chat.
call<session_answer>('GET', '/session').then((me) => start_chat(me).catch(chat_failed), () => undefined);
setInterval(() => void show_events().catch(() => undefined), 1000);
void show_events();
