"""kgym's web pages in a real browser (headless Chromium through Selenium).

The run's view: a short `kgym train --web 127.0.0.1:0` on the CPU (a copy of one built-in task
whose every program carries a script tag and an <img onerror> in a comment), driven while it
trains. The curves and the episode list must render and grow, one episode must open and show its
program as text, and nothing the programs carry may run. A screenshot of the page is saved
(KGYM_WEB_SCREENSHOT, or web_view.png in the working directory).

The service's page: `kgym serve --web 127.0.0.1:0` answers a candidate whose error message is
markup; the page must list the answer with that message as text, and run nothing of it.

Exit 77 (CTest: skipped) only where chromium, chromedriver or selenium are missing."""
import os
import shutil
import subprocess
import sys
import tempfile
import json
import time
import unittest
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
KGYM = os.environ.get("KGYM_BINARY", os.path.join(ROOT, "build", "kgym"))
SCREENSHOT = os.environ.get("KGYM_WEB_SCREENSHOT", os.path.abspath("web_view.png"))

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
except ImportError:
    webdriver = None

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
# What a page that put programs in as markup would run: each marks the page.
HOSTILE = ("# </script><script>window.kgymPwned = 1; document.title = 'pwned'</script>"
           "<img src=x onerror=\"window.kgymPwned = 2; document.title = 'pwned'\">\n")


def read(path):
    with open(path) as f:
        return f.read()


def wait_for(what, check, timeout_s=90.0):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what}")


def js(browser, expression):
    return browser.execute_script("return " + expression)


def chromium_driver():
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,2000"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


class WebViewInABrowser(unittest.TestCase):
    def setUp(self):
        self.work = tempfile.mkdtemp(prefix="kgym-web-browser-")
        tasks = os.path.join(self.work, "tasks")
        shutil.copytree(os.path.join(ROOT, "tasks", "softmax_rows"), os.path.join(tasks, "softmax_rows"))
        candidates = os.path.join(tasks, "softmax_rows", "candidates")
        for name in os.listdir(candidates):
            path = os.path.join(candidates, name)
            with open(path) as f:
                source = f.read()
            with open(path, "w") as f:
                f.write(HOSTILE + source)
        self.run_dir = os.path.join(self.work, "run")
        self.log = open(os.path.join(self.work, "train.out"), "w")
        self.train = subprocess.Popen([KGYM, "train", "--run-dir", self.run_dir, "--tasks-dir", tasks,
                                       "--iterations", "8", "--group-size", "2", "--turns", "2", "--no-eval-cache",
                                       "--web", "127.0.0.1:0", "--quiet"], stdout=self.log, stderr=subprocess.STDOUT)
        self.browser = chromium_driver()

    def tearDown(self):
        self.browser.quit()
        if self.train.poll() is None:
            self.train.kill()
        self.train.wait()
        self.log.close()
        shutil.rmtree(self.work, ignore_errors=True)

    def test_the_view_follows_the_run_and_shows_programs_as_text(self):
        port_file = os.path.join(self.run_dir, "web.port")
        port = wait_for("web.port", lambda: os.path.exists(port_file) and read(port_file).strip())
        self.browser.get(f"http://127.0.0.1:{port}/")
        # The curves: one chart a panel, and the points grow as iterations end.
        wait_for("the charts", lambda: len(self.browser.find_elements(By.CSS_SELECTOR, ".chart canvas")) > 0)
        first_points = wait_for("a first iteration on the charts", lambda: js(self.browser, "state.metrics.length"))
        first_rows = wait_for("episode rows", lambda: len(self.browser.find_elements(By.CSS_SELECTOR, "#episodes tbody tr")))
        wait_for("more iterations", lambda: js(self.browser, "state.metrics.length") > first_points)
        wait_for("more episodes", lambda: len(self.browser.find_elements(By.CSS_SELECTOR, "#episodes tbody tr")) > first_rows)
        self.assertGreaterEqual(len(self.browser.find_elements(By.CSS_SELECTOR, ".chart canvas")), 6)
        # One finished episode, opened from the table: its program is there as text.
        row = wait_for("a finished episode", lambda: next(
            (r for r in self.browser.find_elements(By.CSS_SELECTOR, "#episodes tbody tr")
             if r.find_elements(By.TAG_NAME, "td")[3].text == "finished"), None))
        episode_id = row.get_attribute("data-id")
        row.click()
        wait_for("the episode view", lambda: self.browser.find_element(By.ID, "episode-section").is_displayed())
        self.assertEqual(self.browser.find_element(By.ID, "episode-id").text, episode_id)
        programs = [p.get_attribute("textContent") for p in self.browser.find_elements(By.CSS_SELECTOR, "#turns .turn pre")]
        self.assertTrue(any("<script>window.kgymPwned = 1" in p and "class ModelNew" in p for p in programs), programs[:1])
        self.assertIn("#episode=", self.browser.current_url)
        # Nothing the programs carry ran.
        self.assertEqual(self.browser.title, "kgym run")
        self.assertIsNone(js(self.browser, "window.kgymPwned"))
        self.assertEqual(self.browser.find_elements(By.CSS_SELECTOR, "img"), [])
        self.browser.execute_script("window.scrollTo(0, 0)")
        self.browser.get_screenshot_as_file(SCREENSHOT)
        self.assertGreater(os.path.getsize(SCREENSHOT), 10000)
        # The run ends on its own.
        self.assertEqual(self.train.wait(timeout=300), 0)


class ServePageInABrowser(unittest.TestCase):
    def setUp(self):
        self.work = tempfile.mkdtemp(prefix="kgym-serve-browser-")
        self.files = {name: os.path.join(self.work, name) for name in ("endpoint", "http", "web")}
        self.log = open(os.path.join(self.work, "serve.out"), "w")
        self.serve = subprocess.Popen([KGYM, "serve", "--api", "tcp://127.0.0.1:*", "--endpoint-file", self.files["endpoint"],
                                       "--http", "127.0.0.1:0", "--http-file", self.files["http"], "--web", "127.0.0.1:0",
                                       "--web-file", self.files["web"], "--executors", "1"],
                                      stdout=self.log, stderr=subprocess.STDOUT)
        self.browser = chromium_driver()

    def tearDown(self):
        self.browser.quit()
        self.serve.terminate()
        self.serve.wait(timeout=60)
        self.log.close()
        shutil.rmtree(self.work, ignore_errors=True)

    def test_the_page_lists_answers_and_shows_their_messages_as_text(self):
        port = {name: wait_for(name, lambda p=path: os.path.exists(p) and read(p).strip())
                for name, path in self.files.items() if name != "endpoint"}
        source = ("class ModelNew:\n"
                  "    def __init__(self, *args):\n"
                  "        raise RuntimeError('<img src=x onerror=\"window.kgymPwned = 3\"><script>window.kgymPwned = 4</script>')\n")
        body = json.dumps({"request_id": "markup-1", "task_id": "softmax_rows", "candidate_source": source}).encode()
        answer = urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port['http']}/v1/evaluations",
                                                               data=body, method="POST"), timeout=30)
        self.assertEqual(answer.status, 202)
        self.browser.get(f"http://127.0.0.1:{port['web']}/")
        row = wait_for("the answer on the page", lambda: next(
            (r for r in self.browser.find_elements(By.CSS_SELECTOR, "#recent tbody tr")
             if r.find_elements(By.TAG_NAME, "td")[0].text == "markup-1"), None), timeout_s=120)
        cells = [c.text for c in row.find_elements(By.TAG_NAME, "td")]
        self.assertEqual(cells[2], "COMPILE_ERROR")
        self.assertIn("<img src=x onerror=", cells[7])
        self.assertEqual(len(self.browser.find_elements(By.CSS_SELECTOR, "#executors tbody tr")), 1)
        # The charts: drawn from Debian's dygraphs, a sample a poll, and the answer counted in the rate.
        wait_for("the charts", lambda: len(self.browser.find_elements(By.CSS_SELECTOR, ".chart canvas")) >= 2)
        samples = js(self.browser, "serveState.samples.length")
        wait_for("more samples", lambda: js(self.browser, "serveState.samples.length") > samples)
        self.assertGreaterEqual(js(self.browser, "serveState.samples.length"), 2)
        self.assertEqual(self.browser.title, "kgym serve")
        self.assertIsNone(js(self.browser, "window.kgymPwned"))
        self.assertEqual(self.browser.find_elements(By.CSS_SELECTOR, "img"), [])


if __name__ == "__main__":
    if webdriver is None or not CHROMIUM or not CHROMEDRIVER:
        print("[  SKIPPED ] the browser test needs chromium, chromium-driver (Debian) and selenium "
              "(deploy/requirements-browser-test.txt): deploy/setup.sh installs them")
        sys.exit(77)
    unittest.main(verbosity=2)
