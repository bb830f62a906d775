"""The interactive page (render --format html): one self-contained file whose
JavaScript, generated from the graph, recomputes every value and gradient.

The browser tests drive Debian's chromium through selenium and chromium-driver,
and are skipped where those are not installed (apt-get install chromium
chromium-driver; pip install selenium)."""

import html.parser
import json
import math
import re
import shutil
import tempfile
from pathlib import Path

import pytest

from autodiff_cli.cli.main import main
from autodiff_cli.core.graph import Graph, Node
from autodiff_cli.pictures.page import JS, interactive_page
from autodiff_cli.pictures.text import number

ROOT = Path(__file__).parent.parent
needs_dot = pytest.mark.skipif(shutil.which('dot') is None, reason='Graphviz is not installed')
CHROMIUM = shutil.which('chromium') or shutil.which('chromium-browser')
DRIVER = shutil.which('chromedriver')


def page_of(tmp_path, *argv):
    target = tmp_path / 'page.html'
    assert main(['render', *argv, '-o', str(target)]) == 0
    return target


def grad_json(capsys, *argv):
    assert main(['grad', *argv, '--json']) == 0
    return json.loads(capsys.readouterr().out)


@needs_dot
def test_the_page_is_self_contained_and_its_code_comes_from_the_table(tmp_path):
    text = page_of(tmp_path, '-f', str(ROOT / 'samples' / 'neuron.ad')).read_text()
    assert not re.search(r'(src|href)\s*=\s*"(https?:)?//', text)     # nothing from the network
    assert 'eval(' not in text and 'new Function' not in text and 'innerHTML' not in text
    code = text[text.index('function run(x) {'):text.index('function at(slot)')]
    statements = re.findall(r't\[\d+\] = (.*);', code)
    assert statements
    # Every statement is a template of the table with t[k], x[k] or c[k] filled in.
    shapes = {re.sub(r'\b[abc]\b', 'ARG', template) for template in JS.values()}
    for statement in statements:
        shape = re.sub(r't\[\d+\]', 'ARG', statement)
        assert shape in shapes or re.fullmatch(r'[xc]\[\d+\]', statement), statement


def hostile_graph(name):
    source = f'-({name})'
    return Graph(nodes=[Node('input', name=name, span=(2, 2 + len(name))),
                        Node('neg', (0,), span=(0, len(source)))],
                 output=1, inputs={name: 0}, defaults={}, source=source)


@needs_dot
def test_hostile_names_cannot_break_the_page():
    from autodiff_cli.cli.render import _layout
    name = 'a<b>&"q\']]></script><!--<script'
    text = interactive_page(hostile_graph(name), {name: 2.0},
                            layout=lambda d: _layout(d, 'svg')).decode('utf-8')
    assert text.count('<script') == 1 and text.count('</script>') == 1
    assert '<b>' not in text and ']]>' not in text.replace(']]&gt;', '')

    class Tags(html.parser.HTMLParser):
        seen = []

        def handle_starttag(self, tag, attrs):
            self.seen.append(tag)
    parser = Tags()
    parser.feed(text)
    assert 'b' not in parser.seen and parser.seen.count('script') == 1


@needs_dot
def test_an_op_the_page_cannot_compute_is_refused(tmp_path, capsys):
    assert main(['render', 'erf(x)', 'x=1', '-o', str(tmp_path / 'p.html')]) == 2
    assert "cannot compute 'erf'" in capsys.readouterr().err


# ---- in a real browser ----

@pytest.fixture(scope='module')
def browser():
    if not (CHROMIUM and DRIVER):
        pytest.skip('chromium and chromium-driver are not installed')
    webdriver = pytest.importorskip('selenium.webdriver')
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    options = Options()
    options.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix='adgrad-chromium-')
    for flag in ('--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
                 '--disable-component-update', '--disable-sync', '--no-first-run',
                 f'--user-data-dir={profile}'):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


def set_input(driver, k, value):
    """Type a value into input k's number box, as a user would."""
    box = driver.find_element('id', f'n{k}')
    box.clear()
    box.send_keys(repr(value))


def exact(driver):
    rows = driver.find_elements('css selector', '#exact tr')
    return {r.find_elements('tag name', 'td')[0].text: float(r.find_elements('tag name', 'td')[1].text)
            for r in rows}


@needs_dot
def test_setting_an_input_updates_every_gradient_as_adgrad_grad(browser, tmp_path, capsys):
    page = page_of(tmp_path, '-f', str(ROOT / 'samples' / 'product.ad'))
    browser.get(page.as_uri())
    assert exact(browser) == {'value': 24, 'd_x': 12, 'd_y': 8, 'd_z': 6}
    set_input(browser, 0, 5.0)                                  # x = 5
    expected = grad_json(capsys, '-f', str(ROOT / 'samples' / 'product.ad'), 'x=5')
    got = exact(browser)
    assert got['value'] == expected['value'] == 60
    assert {k[2:]: v for k, v in got.items() if k != 'value'} == expected['gradient']
    texts = [t.text for t in browser.find_elements('css selector', '#node-n0 text')]
    assert texts == ['x', '5', '∂f/∂x = 12']
    assert [t.text for t in browser.find_elements('css selector', '#node-n1 text')][-1] == \
        '∂f/∂y = 20'                                            # x·z = 5·4


@needs_dot
@pytest.mark.parametrize('sample, name, value', [('deep', 'x', 0.3), ('mlp_scalar', 'w3', -0.7),
                                                 ('softmax', 'a', 3.5)])
def test_samples_recomputed_in_the_browser_agree_with_grad(browser, tmp_path, capsys,
                                                           sample, name, value):
    path = str(ROOT / 'samples' / f'{sample}.ad')
    browser.get(page_of(tmp_path, '-f', path).as_uri())
    names = [e.get_attribute('textContent') for e in
             browser.find_elements('css selector', '#inputs label code')]
    set_input(browser, names.index(name), value)
    expected = grad_json(capsys, '-f', path, f'{name}={value!r}')
    got = exact(browser)
    # JavaScript's Math and C's libm may differ in the last bit of tanh and exp.
    assert got['value'] == pytest.approx(expected['value'], rel=1e-13)
    for variable, gradient in expected['gradient'].items():
        assert got[f'd_{variable}'] == pytest.approx(gradient, rel=1e-12, abs=1e-300)
    # The labels show what a picture would: four digits, from the same numbers.
    grad_label = browser.find_elements('css selector', '#node-n0 text')[-1].text
    first = list(expected['gradient'])[0] if sample != 'mlp_scalar' else None
    if first is not None and not math.isnan(expected['gradient'][first]):
        assert grad_label.endswith(number(expected['gradient'][first])) or \
            grad_label.endswith(number(got[f'd_{first}']))


@needs_dot
def test_an_unrolled_array_program_recomputes_in_the_browser_as_grad_of_its_arrays(
        browser, tmp_path, capsys):
    """samples/mlp.ad unrolled: a slider per number, and every entry's gradient
    is the entry of grad's array at the point the page was moved to."""
    path = str(ROOT / 'samples' / 'mlp.ad')
    browser.get(page_of(tmp_path, '-f', path, '--unroll').as_uri())
    names = [e.get_attribute('textContent') for e in
             browser.find_elements('css selector', '#inputs label code')]
    assert {'x[0]', 'W1[2,0]', 'b1[3]', 'V[0,1]', 'c', 'target'} <= set(names)
    set_input(browser, names.index('c'), -0.3)
    expected = grad_json(capsys, '-f', path, 'c=-0.3')
    got = exact(browser)
    assert got['value'] == pytest.approx(expected['value'], rel=1e-13)
    for k in range(4):
        assert got[f'd_W1[{k},0]'] == pytest.approx(expected['gradient']['W1'][k][0], rel=1e-12)
        assert got[f'd_V[0,{k}]'] == pytest.approx(expected['gradient']['V'][0][k], rel=1e-12)


def slide(driver, k, *keys):
    """Move input k's slider with the keyboard, as a user would; its new value."""
    from selenium.webdriver.common.keys import Keys
    driver.find_element('id', f'r{k}').send_keys(*(getattr(Keys, key) for key in keys))
    return float(driver.find_element('id', f'r{k}').get_attribute('value'))


def node_texts(driver, i):
    return [t.get_attribute('textContent')
            for t in driver.find_elements('css selector', f'#node-n{i} text')]


@needs_dot
def test_moving_a_slider_updates_the_gradients_to_adgrad_grads(browser, tmp_path, capsys):
    path = str(ROOT / 'samples' / 'product.ad')
    browser.get(page_of(tmp_path, '-f', path).as_uri())
    x = slide(browser, 0, *['RIGHT'] * 25)              # x: 2 -> 2.5, in steps of 0.02
    assert x != 2 and float(browser.find_element('id', 'n0').get_attribute('value')) == x
    expected = grad_json(capsys, '-f', path, f'x={x!r}')
    got = exact(browser)
    assert got['value'] == expected['value'] and \
        {k[2:]: v for k, v in got.items() if k != 'value'} == expected['gradient']
    gradients = expected['gradient']
    assert node_texts(browser, 0)[-1] == f'∂f/∂x = {number(gradients["x"])}'
    assert node_texts(browser, 1)[-1] == f'∂f/∂y = {number(gradients["y"])}'   # x·z
    assert node_texts(browser, 2)[-1] == f'∂f/∂z = {number(gradients["z"])}'   # x·y


@needs_dot
def test_rounding_noise_is_about_zero_on_the_page_as_in_the_picture(browser, tmp_path, capsys):
    """softmax.ad's ∂loss/∂m is exactly 0 by hand, and rounding noise of two
    terms that cancel where a = 1 (-1.1e-16 at a = 2): the page says ≈ 0,
    as the static picture does, at every point the slider reaches."""
    path = str(ROOT / 'samples' / 'softmax.ad')
    browser.get(page_of(tmp_path, '-f', path).as_uri())
    assert node_texts(browser, 2)[-1] == '∂loss/∂m ≈ 0'
    a = slide(browser, 0, *['LEFT'] * 50)                # a: 2 -> 1, in steps of 0.02
    assert a == 1.0
    noise = grad_json(capsys, '-f', path, 'a=1.0', '--nodes')
    assert node_texts(browser, 2)[-1] == '∂loss/∂m ≈ 0'
    assert noise['nodes'][2]['name'] == 'm' and noise['nodes'][2]['grad'] != 0   # noise
    labels = [e.text for e in browser.find_elements('css selector', '[id^="grad-"] text')]
    assert '≈0' in labels and not [t for t in labels if 'e-16' in t or 'e-17' in t]


@needs_dot
def test_magnitude_colours_follow_the_slider(browser, tmp_path, capsys):
    from autodiff_cli.pictures.style import NONFINITE_FILL, scale_color
    path = str(ROOT / 'samples' / 'deep.ad')
    browser.get(page_of(tmp_path, '-f', path, '--color', 'magnitude').as_uri())

    def fill():
        return browser.find_element('css selector', '#node-n0 ellipse').get_attribute('fill')
    before = fill()
    x = slide(browser, 0, 'END')                          # x: 0.5 -> 2.5
    d_x = grad_json(capsys, '-f', path, f'x={x!r}')['gradient']['x']
    assert 0 < abs(d_x) < 1e-6                            # vanished further
    assert fill() == scale_color(math.log10(abs(d_x))) != before != NONFINITE_FILL
    assert node_texts(browser, 0)[-1] == f'∂z/∂x = {number(d_x)}  (vanishing)'
    x = slide(browser, 0, 'HOME')                         # x = -1.5: less vanished
    d_x = grad_json(capsys, '-f', path, f'x={x!r}')['gradient']['x']
    assert fill() == scale_color(math.log10(abs(d_x)))
    assert node_texts(browser, 0)[-1] == f'∂z/∂x = {number(d_x)}'


# ---- the --steps page, in a real browser ----

@needs_dot
def test_steps_page_keys_scroll_and_legible_fit(browser, tmp_path):
    lines = ['input x = 0.1', 'f(a) = a + 1', 'y1 = f(x)'] + [f'y{k} = f(y{k - 1})'
                                                            for k in range(2, 13)]
    program = tmp_path / 'chain.ad'
    program.write_text('\n'.join(lines) + '\n')
    folder = tmp_path / 'steps'
    # --size: drawn as given, left to right, not fitted to a slide (wrapped onto rows)
    assert main(['render', '-f', str(program), '--steps', str(folder), '--size', '100,100']) == 0
    browser.set_window_size(800, 600)
    browser.get((folder / 'index.html').as_uri())
    count = int(re.search(r'of (\d+)', browser.find_element('id', 'counter').text).group(1))
    # The caption is on the page once, as text; the SVG frame carries none.
    assert browser.find_element('id', 'caption').text.startswith('∂y12/∂y12 = 1')

    def press(key, **modifiers):
        """Dispatch a keydown; True if the page took it (prevented the default)."""
        return browser.execute_script(
            'var e = new KeyboardEvent("keydown", Object.assign({key: arguments[0], '
            'bubbles: true, cancelable: true}, arguments[1]));'
            'document.body.dispatchEvent(e); return e.defaultPrevented;', key, modifiers)
    assert press('ArrowRight') is True
    assert browser.find_element('id', 'counter').text == f'step 2 of {count}'
    for modifier in ('altKey', 'ctrlKey', 'metaKey', 'shiftKey'):
        assert press('ArrowLeft', **{modifier: True}) is False    # left to the browser
    assert browser.find_element('id', 'counter').text == f'step 2 of {count}'
    # A frame wider than the window keeps at least 60% of its size, and the
    # view scrolls to the node the step highlights.
    sizes = browser.execute_script(
        'var img = document.querySelectorAll("#frames img")[1];'
        'var f = document.getElementById("frames");'
        'return [img.naturalWidth, img.width, f.clientWidth, f.scrollLeft, f.scrollWidth];')
    natural, shown, room, scrolled, total = sizes
    assert natural > room / 0.6 and shown >= 0.6 * natural - 1 and shown > room
    assert scrolled > 0                      # step 2's node is at the right, near the output
    press('Home')
    press('End')                             # the last step is x, at the far left
    assert browser.execute_script('return document.getElementById("frames").scrollLeft') == 0
