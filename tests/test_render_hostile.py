"""render against hostile input and awkward destinations (issue 12): markup and
control characters in text, pipes behind -o, and --steps corners that used
to fail halfway through writing."""

import html.parser
import os
import shutil
import stat
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from autodiff_cli import backward, forward
from autodiff_cli.cli.main import main
from autodiff_cli.table.files import umask
from autodiff_cli.core.graph import Graph, Node
from autodiff_cli.pictures.render import render
from autodiff_cli.pictures.steps import index_html

needs_dot = pytest.mark.skipif(shutil.which('dot') is None, reason='Graphviz is not installed')
SVG = '{http://www.w3.org/2000/svg}'
# Everything that has broken a label, a page or an SVG somewhere.
HOSTILE = 'a<b>&"q\'{d|e}]]></script><!--<script \\\\ \\n \x01\x7f\ufffe\ud800'


def hostile_graph(name=HOSTILE):
    """-name, built by hand: the parser would never make such a name."""
    source = f'-({name})'
    graph = Graph(nodes=[Node('input', name=name, span=(2, 2 + len(name))),
                         Node('neg', (0,), span=(0, len(source)))],
                  output=1, inputs={name: 0}, defaults={}, source=source)
    values = forward(graph, {name: 2.0})
    return graph, values, backward(graph, values)


def test_dot_of_hostile_names_has_no_raw_markup_and_no_invalid_xml():
    dot = render(*hostile_graph()).source
    for raw in ('<b>', '</script>', ']]>', '"q', '\x01', '\ufffe', '\ud800'):
        assert raw not in dot
    assert '&lt;b&gt;&amp;&quot;q&#x27;{d|e}]]&gt;&lt;/script&gt;' in dot


@needs_dot
def test_svg_of_hostile_names_parses_and_keeps_every_backslash():
    svg = render(*hostile_graph())._repr_svg_()
    words = [t.text for t in ET.fromstring(svg).iter(f'{SVG}text') if t.text]
    expected = HOSTILE.translate({1: 0xfffd, 0x7f: 0x7f, 0xfffe: 0xfffd, 0xd800: 0xfffd})
    assert expected in words      # two backslashes stay two; \n stays backslash-n


def test_steps_page_script_cannot_be_closed_or_escaped_by_a_caption():
    page = index_html(HOSTILE, ['step-001.svg'], [HOSTILE])
    script = page[page.index('<script>') + len('<script>'):page.rindex('</script>')]
    for raw in ('<', '>', '&'):
        assert raw not in script.split('var captions = ', 1)[1].split(';', 1)[0]
    assert page.count('<script') == 1 and page.count('</script>') == 1

    class Scripts(html.parser.HTMLParser):
        found, inside = [], False

        def handle_starttag(self, tag, attrs):
            self.inside = tag == 'script'

        def handle_endtag(self, tag):
            self.inside = False

        def handle_data(self, data):
            if self.inside:
                self.found.append(data)
    parser = Scripts()
    parser.feed(page)
    assert len(parser.found) == 1 and parser.found[0].rstrip().endswith('})();')


@needs_dot
def test_a_comment_with_a_control_character_renders(tmp_path):
    program = tmp_path / 'c.ad'
    program.write_text('input x = 1\ny = (x # a \x01 \ufffe <!--<script\n + 1)\n', encoding='utf-8')
    assert main(['render', '-f', str(program), '-o', str(tmp_path / 'c.svg')]) == 0
    ET.fromstring((tmp_path / 'c.svg').read_bytes())


@needs_dot
def test_output_to_dev_stdout_into_a_pipe_and_a_process_substitution(tmp_path):
    command = [sys.executable, '-m', 'autodiff_cli', 'render', 'x*y', 'x=2', 'y=3']
    piped = subprocess.run(command + ['-o', '/dev/stdout'], capture_output=True)
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout.startswith(b'<?xml')
    if shutil.which('bash'):
        script = ' '.join(command) + f' -o >(cat > {tmp_path}/sub.svg); wait'
        done = subprocess.run(['bash', '-c', script], capture_output=True)
        assert done.returncode == 0, done.stderr
        for _ in range(50):
            if (tmp_path / 'sub.svg').exists() and (tmp_path / 'sub.svg').stat().st_size:
                break
            subprocess.run(['sleep', '0.1'])
        assert (tmp_path / 'sub.svg').read_bytes().startswith(b'<?xml')


def test_steps_of_a_constant_is_refused_before_anything_is_written(tmp_path, capsys):
    assert main(['render', '2*3', '--steps', str(tmp_path / 'k')]) == 2
    assert 'nothing to show' in capsys.readouterr().err
    assert not (tmp_path / 'k').exists()


@needs_dot
def test_steps_and_output_naming_the_same_path_write_nothing(tmp_path, capsys):
    same = str(tmp_path / 'X')
    assert main(['render', 'x*y', 'x=1', 'y=2', '--steps', same, '-o', same]) == 2
    assert 'same path' in capsys.readouterr().err
    assert not os.path.exists(same)
    inside = str(tmp_path / 'S' / 'index.html')
    os.mkdir(tmp_path / 'S')
    assert main(['render', 'x*y', 'x=1', 'y=2', '--steps', str(tmp_path / 'S'),
                 '-o', inside]) == 2
    assert os.listdir(tmp_path / 'S') == []


@needs_dot
def test_a_folder_named_like_a_frame_is_refused_before_any_frame_is_written(tmp_path, capsys):
    (tmp_path / 'S' / 'step-002.svg').mkdir(parents=True)
    picture = tmp_path / 'p.svg'
    assert main(['render', 'x*y', 'x=1', 'y=2', '--steps', str(tmp_path / 'S'),
                 '-o', str(picture)]) == 2
    assert 'is a directory' in capsys.readouterr().err
    assert os.listdir(tmp_path / 'S') == ['step-002.svg'] and not picture.exists()


@needs_dot
def test_new_files_get_the_umask_and_the_umask_is_left_alone(tmp_path):
    before = os.umask(0o027)
    try:
        assert umask(str(tmp_path)) == 0o027
        assert main(['render', 'x*y', 'x=1', 'y=2', '-o', str(tmp_path / 'm.svg')]) == 0
        assert stat.S_IMODE((tmp_path / 'm.svg').stat().st_mode) == 0o640
        assert os.umask(0o027) == 0o027      # still what it was set to
    finally:
        os.umask(before)
