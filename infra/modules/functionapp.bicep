// One Function App on Flex Consumption (Linux, Python), running as the user-assigned identity.
param location string
param name string
param tags object
param identityId string
param identityClientId string
param deploymentContainerUrl string
@allowed(['3.11'])
param pythonVersion string = '3.11'
@allowed([512, 2048, 4096])
param instanceMemoryMB int = 2048
@minValue(40)
@maxValue(1000)
param maximumInstanceCount int = 100
@description('App settings as name: value. Secrets are Key Vault references, never literal values.')
param appSettings object

resource plan 'Microsoft.Web/serverfarms@2024-04-01' = {
  // checkov:skip=CKV_AZURE_225: zone redundancy is a regional option of Flex Consumption left to the operator (cost and region support vary).
  name: 'plan-${name}'
  location: location
  tags: tags
  kind: 'functionapp'
  sku: { name: 'FC1', tier: 'FlexConsumption' }
  properties: { reserved: true }
}

resource site 'Microsoft.Web/sites@2024-04-01' = {
  // checkov:skip=CKV_AZURE_17: client certificates do not fit the extractor contract's bearer-token auth; HTTP triggers check tokens.
  // checkov:skip=CKV_AZURE_56: App Service Authentication (Easy Auth) would reject the contract's own bearer tokens.
  // checkov:skip=CKV_AZURE_222: the extractor's HTTP API is called by Loom servers over the public endpoint (bearer-token auth); no VNet integration here.
  // checkov:skip=CKV_AZURE_212: Flex Consumption scales to zero by design; set alwaysReady in functionAppConfig for warm instances.
  // checkov:skip=CKV_AZURE_213: the platform health check does not apply to Flex Consumption's event-driven scaling; GET /healthz (no token) is the extractor's liveness probe.
  name: name
  location: location
  tags: tags
  kind: 'functionapp,linux'
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: { '${identityId}': {} }
  }
  properties: {
    serverFarmId: plan.id
    httpsOnly: true
    keyVaultReferenceIdentity: identityId
    siteConfig: {
      minTlsVersion: '1.2'
      ftpsState: 'Disabled'
      http20Enabled: true
      appSettings: [for setting in items(appSettings): { name: setting.key, value: string(setting.value) }]
    }
    functionAppConfig: {
      deployment: {
        storage: {
          type: 'blobContainer'
          value: deploymentContainerUrl
          authentication: {
            type: 'UserAssignedIdentity'
            userAssignedIdentityResourceId: identityId
          }
        }
      }
      scaleAndConcurrency: {
        instanceMemoryMB: instanceMemoryMB
        maximumInstanceCount: maximumInstanceCount
      }
      runtime: { name: 'python', version: pythonVersion }
    }
  }
}

// Basic-auth publishing credentials off: deployments go through Entra ID.
resource ftp 'Microsoft.Web/sites/basicPublishingCredentialsPolicies@2024-04-01' = {
  parent: site
  name: 'ftp'
  properties: { allow: false }
}

resource scm 'Microsoft.Web/sites/basicPublishingCredentialsPolicies@2024-04-01' = {
  parent: site
  name: 'scm'
  properties: { allow: false }
}

output name string = site.name
output defaultHostName string = site.properties.defaultHostName
output identityClientId string = identityClientId
