"""A ResNet-18-sized torch model in the exported page: drawn collapsed by module, groups expand
and collapse on click, and stepping inside a collapsed group lights the group up."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from gradviz.widget import export_html  # noqa: E402
from fixtures.torch_models import ResNet18  # noqa: E402

pytestmark = pytest.mark.browser

COLLAPSED = ".gv-group-collapsed"


def names_of(page, selector) -> list:
    return page.eval_on_selector_all(selector, "els => els.map(e => e.getAttribute('data-name'))")


@pytest.fixture(scope="module")
def resnet_page_path(tmp_path_factory):
    torch.manual_seed(0)
    model = ResNet18()
    loss = torch.nn.functional.cross_entropy(model(torch.randn(2, 3, 32, 32)), torch.tensor([1, 3]))
    return export_html(loss, tmp_path_factory.mktemp("resnet") / "resnet.html", model=model)


def test_resnet_renders_collapsed_by_module_and_expands_on_click(offline_page, resnet_page_path, artifacts):
    page = offline_page
    page.goto(resnet_page_path.as_uri())
    page.wait_for_selector(COLLAPSED)
    top = names_of(page, COLLAPSED)
    assert {"conv1", "bn1", "layer1", "layer2", "layer3", "layer4", "fc"} <= set(top)
    drawn = page.locator("[data-node-id]").count()
    assert 0 < drawn < 60  # the ~220 nodes are mostly inside the boxes
    page.screenshot(path=str(artifacts / "resnet-collapsed.png"))

    page.click(f"{COLLAPSED}[data-name=layer1]")
    assert "layer1" not in names_of(page, COLLAPSED)
    assert {"layer1.0", "layer1.1"} <= set(names_of(page, COLLAPSED))
    assert names_of(page, ".gv-group-expanded") == ["layer1"]  # its header, to collapse it again
    page.click(f"{COLLAPSED}[data-name='layer1.0']")
    assert page.locator("[data-node-id]").count() > drawn
    assert page.get_attribute(".gv-group-expanded[data-name='layer1.0']", "aria-expanded") == "true"
    page.screenshot(path=str(artifacts / "resnet-expanded.png"))

    page.click(".gv-group-expanded[data-name=layer1]")
    assert "layer1" in names_of(page, COLLAPSED) and names_of(page, ".gv-group-expanded") == []
    assert page.locator("[data-node-id]").count() == drawn
    assert page.errors == [] and page.blocked == []


def test_stepping_into_a_collapsed_group_highlights_the_group(offline_page, resnet_page_path, artifacts):
    page = offline_page
    page.goto(resnet_page_path.as_uri())
    page.wait_for_selector(COLLAPSED)
    for index in range(1, 40):
        page.click("[data-action=next]")
        if page.locator(".gv-group-current").count():
            break
    assert page.inner_text(".gv-status") == f"Step {index} of " + page.inner_text(".gv-status").split(" of ")[1]
    assert page.locator(".gv-current").count() == 0  # the node itself is inside the box
    (group,) = names_of(page, ".gv-group-current")
    assert group in {"fc", "layer4"}
    assert "Step" in page.inner_text(".gv-panel")  # the chain-rule panel still explains the step
    page.screenshot(path=str(artifacts / "resnet-step-in-group.png"))
    page.focus(f"{COLLAPSED}.gv-group-current")
    page.keyboard.press("Enter")  # expand by keyboard: the node shows, current
    assert page.locator(".gv-current").count() == 1
    assert page.locator(".gv-group-current").count() == 0 or names_of(page, ".gv-group-current") != [group]
