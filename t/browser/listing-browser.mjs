// Drives headless Chromium (playwright-core, the system's /usr/bin/chromium)
// through fileserverd's HTML listings: open the root listing, follow the
// link into a subdirectory, sort by size by clicking the column header
// (twice: both orders), check the order against the sizes the test wrote;
// then load a 100,000-entry listing and report how long it takes.
//
// Usage: node listing-browser.mjs BASE_URL EXPECT_JSON PROFILE_DIR
//   EXPECT_JSON: {"sub": "sub", "sizes": {"name": bytes, ...}, "big": "big", "bign": 100000}
// Prints TAP-like "ok - ..." / "not ok - ..." lines and "# ..." figures;
// exits 0 when all checks pass, 1 otherwise.
import { chromium } from 'playwright-core';

const [base, expectJson, profile] = process.argv.slice(2);
const want = JSON.parse(expectJson);
let fails = 0;
const ok = (c, msg) => {
  console.log(`${c ? 'ok' : 'not ok'} - ${msg}`);
  if (!c) fails++;
};

// The entry rows, whatever the markup (table or grid lines): links that
// are relative names (not breadcrumbs in <h1>, not ?sort= headers, not
// rel=next), with the byte size from the row's title="N bytes".
const rowsOf = (page) =>
  page.evaluate(() => {
    const out = [];
    for (const a of document.querySelectorAll('a[href]')) {
      const h = a.getAttribute('href');
      if (a.closest('h1') || a.hasAttribute('rel') || /^[?/#]/.test(h) || h === '../') continue;
      const row = a.closest('tr, .r') || a.parentElement;
      const t = row && row.querySelector('[title$=" bytes"]');
      out.push({ name: decodeURIComponent(h).replace(/\/$/, ''),
                 size: t ? Number(t.title.split(' ')[0]) : -1 });
    }
    return out;
  });

const ctx = await chromium.launchPersistentContext(profile, {
  executablePath: '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic',
         '--no-first-run', '--disable-background-networking',
         '--disable-component-update', '--disable-sync'],
});
try {
  const page = ctx.pages()[0] || await ctx.newPage();
  page.setDefaultTimeout(120000);

  await page.goto(base + '/');
  ok((await page.title()).includes('Index of /'), `root listing loads (title "${await page.title()}")`);
  const root = await rowsOf(page);
  ok(root.some((r) => r.name === want.sub), `root lists ${want.sub}/`);

  // Follow the link into the subdirectory, as a person would.
  await Promise.all([page.waitForURL(`**/${want.sub}/`), page.click(`a[href="${want.sub}/"]`)]);
  ok(page.url() === `${base}/${want.sub}/`, `followed the link to ${page.url()}`);
  let rows = await rowsOf(page);
  const names = Object.keys(want.sizes);
  ok(rows.length === names.length && rows.every((r) => want.sizes[r.name] === r.size),
     `subdirectory lists its ${names.length} files with their sizes`);

  // Sort by size: click the column header, then again for the other order.
  const bySize = (desc) => [...names].sort((a, b) =>
    (want.sizes[a] - want.sizes[b]) * (desc ? -1 : 1) || (a < b ? -1 : a > b ? 1 : 0));
  for (const pass of [1, 2]) {
    await Promise.all([page.waitForNavigation(), page.click('a[href*="sort=size"]')]);
    const desc = new URL(page.url()).searchParams.get('order') === 'desc';
    rows = await rowsOf(page);
    const got = rows.map((r) => r.name);
    const sizes = rows.map((r) => r.size);
    const monotone = sizes.every((s, i) => i === 0 || (desc ? s <= sizes[i - 1] : s >= sizes[i - 1]));
    ok(monotone && JSON.stringify(got) === JSON.stringify(bySize(desc)),
       `click ${pass} on Size: ${desc ? 'largest' : 'smallest'} first (${got.slice(0, 4).join(' ')} ...)`);
  }

  // A 100,000-entry page: time to load and to have every row in the DOM.
  const t0 = Date.now();
  await page.goto(`${base}/${want.big}/`, { waitUntil: 'load', timeout: 600000 });
  const tLoad = Date.now() - t0;
  // One more frame: the page is laid out, painted and answers script.
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => r())));
  const tPaint = Date.now() - t0;
  const n = (await rowsOf(page)).length;
  ok(n === want.bign, `100,000-entry page has ${n} rows`);
  console.log(`# browser_100k_load_ms: ${tLoad}`);
  console.log(`# browser_100k_painted_ms: ${tPaint}`);
  // Still usable: scrolling to the end works and shows the last entry.
  // (checked on the next frames, which is what a person sees: blocks
  // come into view there)
  await page.evaluate(() => new Promise((r) => {
    window.scrollTo(0, document.body.scrollHeight);
    requestAnimationFrame(() => requestAnimationFrame(() => r()));
  }));
  const lastVisible = await page.evaluate(() => {
    const links = [...document.querySelectorAll('a[href]')].filter((a) => !/^[?/#]/.test(a.getAttribute('href')));
    const r = links[links.length - 1].getBoundingClientRect();
    return r.bottom > 0 && r.top < window.innerHeight;
  });
  ok(lastVisible, 'scrolled to the end, the last entry is on screen');
} catch (e) {
  ok(false, `browser run: ${e.message.split('\n')[0]}`);
} finally {
  await ctx.close();
}
process.exit(fails ? 1 : 0);
