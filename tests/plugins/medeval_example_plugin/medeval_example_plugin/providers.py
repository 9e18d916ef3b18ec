"""``example/<model>``: a provider with canned replies and no network, for the ``example_yesno`` protocol:
``{"safe": "no"}`` when the prompt mentions danger, else ``{"safe": "yes"}``."""

from medeval_kit.llm.providers import Completion, Provider, provider


@provider("example")
class ExampleProvider(Provider):
    default_concurrency = 2
    uses_network = False
    example = "example/canned"

    async def acomplete(self, request):
        text = request.messages[-1]["content"]
        reply = '{"safe": "no"}' if "danger" in text.lower() else '{"safe": "yes"}'
        return Completion(text=reply, prompt_tokens=len(text.split()), completion_tokens=4, finish_reason="stop")
