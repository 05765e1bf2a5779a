// Drives headless Chromium against the live dashboard, on commands from
// crates/fusebox-lab/tests/dashboard_browser.rs (stdin), answering on stdout.
//
//   node ops/browser/dashboard.mjs <chromium> <page url> <screenshot dir> <breaker>
//
// Commands, one a line:
//   expect <breaker> <state> <shot>   wait (at most 1 s) until the breaker's tile shows <state>;
//                                     screenshot <shot>.png; answer "seen <state> <ms>"
//   click <breaker> <action> <token>  type the token, press the tile's button; answer "clicked <state>"
//   text <text>\t<selector>          wait (at most 5 s) until the element's text contains <text>;
//                                     answer "text <its text>" (or "missed <its text>")
//   hover <breaker> <shot>            point at the middle of the tile's rates chart; screenshot
//                                     <shot>.png; answer "readout <the values shown>"
//   count <n>\t<selector>             wait (at most 5 s) until <n> elements match <selector>;
//                                     answer "count <how many match>"
//   shot <name>                       screenshot <name>.png; answer "shot"
//   shotof <name>\t<selector>         screenshot the element alone as <name>.png; answer "shot"
//   done                              answer "console-errors <n>" (and each error), exit
// The first answer is "loaded" once the page shows <breaker>, live, with its
// stylesheet applied ("unstyled" if not). A CSP violation is reported as a
// console error ("csp: <directive> <url>"), so "done" lists it.
//
// Playwright starts Chromium headless with a fresh temporary profile (its own
// --user-data-dir) and talks DevTools over a pipe; the flags below keep it
// off the network but for loopback.
import { chromium } from "playwright-core";
import { createInterface } from "node:readline";
import { join } from "node:path";

const [executablePath, url, outDir, breaker] = process.argv.slice(2);
const say = (line) => process.stdout.write(line + "\n");

const browser = await chromium.launch({
  executablePath,
  headless: true,
  args: [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
  ],
});
const errors = [];
try {
  const page = await browser.newPage({ viewport: { width: 1120, height: 660 } });
  page.on("console", (m) => { if (m.type() === "error") errors.push("console: " + m.text()); });
  page.on("pageerror", (e) => errors.push("page error: " + e.message));
  // Runs before the page's own script (DevTools injects it; the CSP does not apply).
  await page.addInitScript(() => document.addEventListener("securitypolicyviolation",
    (e) => console.error(`csp: ${e.violatedDirective} ${e.blockedURI}`)));
  await page.goto(url);
  // A breaker's tile: the only tiles without a kind (bulkheads and other policies have one).
  const tile = (name) => `.tile[data-name="${name}"]:not([data-kind])`;
  await page.waitForSelector(tile(breaker), { timeout: 20000 });
  await page.waitForSelector("#conn.live", { timeout: 10000 });
  // The stylesheet gives a tile a 6px state-coloured left border.
  const border = await page.$eval(tile(breaker), (t) => getComputedStyle(t).borderLeftWidth);
  say(border === "6px" ? "loaded" : `unstyled (border ${border})`);

  for await (const line of createInterface({ input: process.stdin })) {
    const [command, ...args] = line.trim().split(" ");
    if (command === "expect") {
      const [name, state, shot] = args;
      const started = Date.now();
      try {
        await page.waitForSelector(`${tile(name)}[data-state="${state}"]`, { timeout: 1000 });
        const ms = Date.now() - started;
        await page.screenshot({ path: join(outDir, shot + ".png") });
        say(`seen ${state} ${ms}`);
      } catch (e) {
        const shown = await page.getAttribute(tile(name), "data-state");
        say(`missed ${state}: the tile shows ${shown} after ${Date.now() - started} ms`);
      }
    } else if (command === "click") {
      const [name, action, token] = args;
      await page.fill("#token", token);
      await page.click(`${tile(name)} button[data-action="${action}"]`);
      await page.waitForFunction(
        (sel) => !document.querySelector(sel).textContent.endsWith("\u2026"),
        `${tile(name)} .msg`, { timeout: 5000 },
      );
      say("clicked " + (await page.textContent(`${tile(name)} .msg`)));
    } else if (command === "text") {
      const [want, selector] = line.slice("text ".length).split("\t");
      try {
        await page.waitForFunction(
          ([sel, text]) => { const e = document.querySelector(sel); return e && e.textContent.includes(text); },
          [selector, want], { timeout: 5000 },
        );
        say("text " + (await page.textContent(selector)));
      } catch (e) {
        say("missed " + (await page.$eval(selector, (e) => e.textContent).catch(() => "(no such element)")));
      }
    } else if (command === "hover") {
      const [name, shot] = args;
      const box = await page.locator(`${tile(name)} .chart.rates svg`).boundingBox();
      await page.mouse.move(box.x + box.width * 0.5, box.y + box.height * 0.5);
      const readout = `${tile(name)} .readout`;
      await page.waitForFunction((sel) => !document.querySelector(sel).textContent.startsWith("hover"),
        readout, { timeout: 2000 }).catch(() => {});
      await page.screenshot({ path: join(outDir, shot + ".png") });
      say("readout " + (await page.textContent(readout)));
      await page.mouse.move(0, 0);
    } else if (command === "count") {
      const [n, selector] = line.slice("count ".length).split("\t");
      await page.waitForFunction(([sel, want]) => document.querySelectorAll(sel).length >= want,
        [selector, Number(n)], { timeout: 5000 }).catch(() => {});
      say("count " + (await page.$$eval(selector, (all) => all.length)));
    } else if (command === "shotof") {
      const [name, selector] = line.slice("shotof ".length).split("\t");
      await page.locator(selector).screenshot({ path: join(outDir, name + ".png") });
      say("shot");
    } else if (command === "shot") {
      await page.screenshot({ path: join(outDir, args[0] + ".png") });
      say("shot");
    } else if (command === "done") {
      say(`console-errors ${errors.length}`);
      for (const e of errors) say(e);
      break;
    }
  }
} catch (e) {
  say("error " + String(e.message).split("\n")[0]);
} finally {
  await browser.close();
}
