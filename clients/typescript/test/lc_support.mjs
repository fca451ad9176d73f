// What the LangChain JS tests, their kill worker and the bench share: a
// chat model that answers with each scripted message in turn and takes
// tools (no network, no provider).
import { AIMessage } from "@langchain/core/messages";
import { BaseChatModel } from "@langchain/core/language_models/chat_models";

export class Scripted extends BaseChatModel {
  constructor(replies) {
    super({});
    this.replies = [...replies];
  }
  _llmType() {
    return "scripted";
  }
  bindTools() {
    return this;
  }
  async _generate() {
    return { generations: [{ text: "", message: this.replies.shift() ?? new AIMessage("done") }] };
  }
}
