/** Names a side output. Tags are matched by id, so two tags with the same id are the same output. */
export class OutputTag<T> {
  declare readonly __type?: T;
  constructor(readonly id: string) {
    if (typeof id !== 'string' || id.length === 0) throw new TypeError('OutputTag needs a non-empty id');
  }
}
