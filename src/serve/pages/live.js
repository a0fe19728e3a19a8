// oneshot's pages, kept in step with the store through one server-sent-event stream per tab
// (src/serve/live/). A job page appends each new log line where it belongs and reads itself
// again when the job moves; the board reads itself again when a job on it changes. The badge
// next to the navigation says whether what the page shows is live.
(function () {
  'use strict';
  var feed = document.getElementById('live');
  var badge = document.getElementById('live-badge');
  if (!feed || !badge || !window.EventSource) return;
  var src = feed.getAttribute('data-src');
  var lastId = feed.getAttribute('data-after') || '';
  var source = null;
  var opened = false;
  var backoff = 1000;
  var reading = false;
  var readAgain = false;
  var held = false;
  // Until when the page says its job moved on and its buttons wait (ms since the epoch).
  var movedUntil = 0;

  function show(state, text) {
    badge.hidden = false;
    badge.className = 'badge live live-' + state;
    badge.setAttribute('data-state', state);
    badge.textContent = text;
  }

  function connect() {
    source = new EventSource(src + (lastId ? '?after=' + encodeURIComponent(lastId) : ''));
    source.onopen = function () {
      backoff = 1000;
      // Whatever moved while the stream was down shows now.
      if (opened) refresh();
      opened = true;
      show('live', 'live');
    };
    source.onerror = function () {
      if (source.readyState === EventSource.CONNECTING) {
        show('reconnecting', 'reconnecting…');
        return;
      }
      source.close();
      probe();
    };
    source.addEventListener('line', line);
    source.addEventListener('job', changed);
    source.addEventListener('board', changed);
    source.addEventListener('lagged', function () {
      show('reconnecting', 'reconnecting…');
    });
    source.addEventListener('signedout', function () {
      source.close();
      show('signed-out', 'signed out');
      backoff = 30000;
      setTimeout(connect, backoff);
    });
  }

  // The stream was refused or is gone: signed out (401), or the server cannot be reached.
  function probe() {
    fetch(src, { method: 'HEAD', credentials: 'same-origin' }).then(function (r) {
      if (r.status === 401) {
        show('signed-out', 'signed out');
        backoff = 30000;
      } else {
        show('offline', 'offline');
      }
    }, function () {
      show('offline', 'offline');
    }).then(function () {
      setTimeout(connect, backoff);
      backoff = Math.min(backoff * 2, 30000);
    });
  }

  function track(e) {
    if (e.lastEventId) lastId = e.lastEventId;
  }

  function line(e) {
    track(e);
    var d = JSON.parse(e.data);
    var list = null;
    var lists = document.querySelectorAll('ol.account[data-session]');
    for (var i = 0; i < lists.length; i++) {
      if (lists[i].getAttribute('data-session') === d.session) list = lists[i];
    }
    if (!list) {
      // A session the page does not show yet: the page reads itself again.
      refresh();
      return;
    }
    var had = list.querySelectorAll('li[data-entry]');
    var last = had.length ? Number(had[had.length - 1].getAttribute('data-entry')) : 0;
    if (last >= d.entry) return;
    var pending = list.querySelectorAll('li.pending');
    for (var j = 0; j < pending.length; j++) pending[j].remove();
    var before = list.previousElementSibling;
    if (before && before.classList.contains('empty')) before.remove();
    list.insertAdjacentHTML('beforeend', d.html);
  }

  function changed(e) {
    track(e);
    refresh();
  }

  // Someone is typing on the page (a rejection's feedback, a filter): it is not replaced
  // under them; it reads itself again when they leave the field.
  function busy(main) {
    var a = document.activeElement;
    if (a && main.contains(a) && /^(INPUT|TEXTAREA|SELECT)$/.test(a.tagName)) return true;
    var texts = main.querySelectorAll('textarea');
    for (var i = 0; i < texts.length; i++) {
      if (texts[i].value !== texts[i].defaultValue) return true;
    }
    return false;
  }

  // The page is kept as it is under someone's typing: it says so, and a verb sent from it
  // is refused as out of date if the job moved on (the server checks what the form saw).
  function hold(main) {
    held = true;
    if (document.getElementById('live-held')) return;
    var p = document.createElement('p');
    p.id = 'live-held';
    p.className = 'notice';
    p.textContent = 'This job changed since the page was shown; your text is kept. ' +
      'It updates when you leave the field (or reload); an action from this page is refused ' +
      'if what it shows is out of date.';
    main.insertBefore(p, main.firstChild);
  }

  // What the page's verbs are bound to (the forms' hidden fields).
  function binding(main) {
    var f = main.querySelector('form.verb input[name=diff_hash]');
    var st = main.querySelector('form.verb input[name=state]');
    var at = main.querySelector('form.verb input[name=attempt]');
    return [f && f.value, st && st.value, at && at.value].join('|');
  }

  function refresh() {
    if (reading) {
      readAgain = true;
      return;
    }
    var main = document.querySelector('main');
    if (!main) return;
    if (busy(main)) {
      hold(main);
      return;
    }
    reading = true;
    fetch(location.href, { credentials: 'same-origin', headers: { Accept: 'text/html' } })
      .then(function (r) {
        if (r.status === 401) {
          show('signed-out', 'signed out');
          return null;
        }
        return r.ok ? r.text() : null;
      })
      .then(function (html) {
        if (html === null) return;
        var next = new DOMParser().parseFromString(html, 'text/html').querySelector('main');
        var now = document.querySelector('main');
        if (!next || !now) return;
        if (busy(now)) {
          hold(now);
          return;
        }
        next = document.importNode(next, true);
        // The logs this page built from the stream stay: the stream goes on extending them.
        var keep = now.querySelectorAll('ol.account[data-session]');
        for (var i = 0; i < keep.length; i++) {
          var s = keep[i].getAttribute('data-session');
          var fresh = next.querySelectorAll('ol.account[data-session]');
          for (var j = 0; j < fresh.length; j++) {
            if (fresh[j].getAttribute('data-session') === s) {
              var empty = fresh[j].previousElementSibling;
              if (empty && empty.classList.contains('empty') && keep[i].children.length) {
                empty.remove();
              }
              fresh[j].replaceWith(keep[i]);
            }
          }
        }
        var moved = binding(now) !== binding(next);
        now.replaceWith(next);
        if (moved) movedUntil = Date.now() + 2000;
        // A re-read inside the pause (the job's later records) keeps the notice and the wait.
        if (Date.now() < movedUntil) pause(next, movedUntil - Date.now());
      })
      .catch(function () {})
      .then(function () {
        reading = false;
        if (readAgain) {
          readAgain = false;
          refresh();
        }
      });
  }

  // What the verbs act on just changed under the reader: the buttons wait a moment, so a
  // click meant for what was shown does not act on what replaced it.
  function pause(main, ms) {
    var buttons = main.querySelectorAll('form.verb button');
    if (!buttons.length) return;
    var p = document.createElement('p');
    p.className = 'notice';
    p.textContent = 'This job moved on: the page now shows it as it is. Look again before you act.';
    main.insertBefore(p, main.firstChild);
    for (var i = 0; i < buttons.length; i++) buttons[i].disabled = true;
    setTimeout(function () {
      for (var j = 0; j < buttons.length; j++) buttons[j].disabled = false;
    }, ms);
  }

  document.addEventListener('focusout', function () {
    if (held) {
      held = false;
      setTimeout(refresh, 0);
    }
  });

  show('reconnecting', 'connecting…');
  connect();
})();
